"""The herd governor: one object, built once per worker, that owns what a herd changes. The
executor, the reporter and the heartbeats ask it; they never read each other's state.

- The call backlog (``state``): calls whose time has come and whose request has not gone out.
  The garbage collector is paused while there is one (``gc_pause``).
- Busy: a backlog, or reports being sent. A full heartbeat waits while the worker is busy, for
  ``FULL_BEAT_HOLD`` at most (the lease rule that bounds it further is the ``beat_schedule``'s).
- A success report that may wait (an attempt started ahead) waits for the backlog to clear, for
  ``REPORT_HOLD`` at most and at most ``REPORT_HOLD_LEASE_SHARE`` of the lease it has left.
- The shared timer heap of the attempts' lease watches (``timers``).

A stopping worker is never busy and holds nothing back.
"""

from __future__ import annotations

from collections.abc import Callable

from duetime_worker.herd.gc_pause import CollectorPause
from duetime_worker.herd.knobs import FULL_BEAT_HOLD, REPORT_HOLD, REPORT_HOLD_LEASE_SHARE
from duetime_worker.herd.state import CallBacklog
from duetime_worker.herd.timers import Deadlines


class Herd:
    def __init__(
        self, *, full_beat_hold: float = FULL_BEAT_HOLD, collector: CollectorPause | None = None
    ) -> None:
        self._backlog = CallBacklog(collector)
        self._full_beat_hold = full_beat_hold
        self._reporting = 0  # attempts whose call is over and whose report is not yet done
        self._stopping = False
        # The lease watches' deadlines, every attempt's under one timer.
        self.leases = Deadlines()

    @property
    def busy(self) -> bool:
        """Calls wait to go out, or reports to be sent; never once stopping."""
        return not self._stopping and (self._backlog.holding or self._reporting > 0)

    def call_due(self) -> Callable[[], None]:
        """Counts one call whose time has come; the callable returned says it went out (or
        ended without going out), and counts only once."""
        return self._backlog.due()

    def holds_full_beat(self, overdue: float) -> bool:
        """Whether a full beat ``overdue`` seconds late waits for the worker to be less busy."""
        return overdue < self._full_beat_hold and self.busy

    async def success_report_held(self, lease_left: float) -> None:
        """Holds a success report that may wait until the call backlog is gone, within the
        longest hold and its share of the lease left."""
        await self._backlog.passed(min(REPORT_HOLD, lease_left * REPORT_HOLD_LEASE_SHARE))

    def report_begins(self) -> None:
        self._reporting += 1

    def report_ends(self) -> None:
        self._reporting -= 1

    def stop(self) -> None:
        """Nothing is held from now on: a stopping worker beats and reports at once."""
        self._stopping = True
        self._backlog.close()
