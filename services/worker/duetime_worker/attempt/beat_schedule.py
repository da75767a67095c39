"""When the worker's next heartbeat goes, and whether it lists every attempt whose call began
(a full beat) or only those of calls about to begin (``fresh_beats``).

A full beat comes an interval after the last, or half an interval after it once an attempt
whose call began was added (a herd of starts must not become one beat per start, each listing
every attempt). While the herd governor holds it (``Herd.holds_full_beat``: calls due to go
out, reports to send), a full beat waits, and only while every lease it renews has more than
two intervals left (a beat on time finds that much of the three intervals advised): it would
take CPU from calls already late, and most of the attempts it lists end meanwhile. A call
about to begin gets a beat of its own sooner, ``URGENT_SPACING`` after the last beat: the calls
of a herd ask over some tens of milliseconds, and share a beat rather than each sending one
that lists every attempt.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from duetime_worker.attempt.lifecycle import Attempt, Key
from duetime_worker.herd.governor import Herd
from duetime_worker.herd.knobs import URGENT_SPACING


class BeatSchedule:
    """The beats of one stream (``active``: the attempts they list)."""

    def __init__(self, interval: float, active: Mapping[Key, Attempt], herd: Herd) -> None:
        self._interval = interval
        self._active = active
        self._herd = herd
        # An attempt was added since the last full beat: the next full one comes sooner.
        self._added = False
        self._last_full = -math.inf
        self._last_sent = -math.inf

    def attempt_added(self) -> None:
        self._added = True

    def new_stream(self) -> None:
        """A full beat at once on a new stream."""
        self._last_full = -math.inf

    def going(self, now: float, full: bool) -> None:
        """A beat goes at ``now``."""
        if full:
            self._last_full, self._added = now, False

    def sent(self, now: float) -> None:
        """A beat listing some attempt went at ``now``."""
        self._last_sent = now

    def next_beat(self, now: float, fresh_wanted: bool) -> tuple[float, bool]:
        """When the next beat goes (loop time) and whether it is full; ``fresh_wanted``: a
        call about to begin waits for a beat not yet sent."""
        full_at = self._last_full + (self._interval / 2 if self._added else self._interval)
        if full_at <= now and self._held(full_at, now):
            full_at = now + URGENT_SPACING  # asked again then
        if fresh_wanted:
            urgent_at = self._last_sent + URGENT_SPACING
            if urgent_at < full_at:
                return urgent_at, False
        return full_at, True

    def _held(self, due: float, now: float) -> bool:
        """Whether a full beat due at ``due`` waits for the worker to be less busy."""
        if not self._herd.holds_full_beat(now - due):
            return False
        soonest = min(
            (a.lease_deadline for a in self._active.values() if a.began), default=math.inf
        )
        return soonest - now > 2 * self._interval
