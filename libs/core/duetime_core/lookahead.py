"""How far ahead a scheduler claims: its look-ahead, grown by what is due.

A run must be claimed, published and started ahead before its instant. In steady state the
fixed look-ahead (``DUETIME_CLAIM_LOOKAHEAD``, 10 s) is plenty; a herd of N runs due at one
instant needs ``N / rate`` seconds of claiming on top of it, where ``rate`` is what the
scheduler counts on claiming a second (``DUETIME_CLAIM_RATE``). So the claim reaches as far as
the latest instant y (within the horizon, one minute) whose jobs due by it could not all be
claimed in time if the claim began later:

    look-ahead = max(base, max{ y <= horizon : due_by(y) / rate >= y - base })

where ``due_by(y)`` counts the jobs not yet claimed whose next run is due within y seconds.
Steady load below ``rate`` never grows it (jobs due within y - base number about
rate_steady x (y - base)); a herd grows it exactly as much as its size needs.

Steady load above ``rate`` would grow it at every count, though the scheduler claims that load
on time: it would claim the next seconds' runs all at once, let the look-ahead fall back, and
again, in bursts that leave the fleet tens of thousands of runs to publish and start at once.
So the rate counted on is at least ``STEADY_HEADROOM`` times the steady flow the scheduler is
claiming (``SteadyFlow``): the fleet does that now. A herd on top of it is planned on what is
left of that rate. Pure: the store counts, the claimer asks.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from datetime import timedelta

# The rate counted on is at least this many times the steady flow claimed a second.
STEADY_HEADROOM = 1.25
# The seconds gone by whose median bounds the steady flow, once they have all been seen.
PAST_SECONDS = 50


def herd_lookahead(
    due_by_second: Iterable[tuple[int, int]],
    *,
    base: timedelta,
    horizon: timedelta,
    rate: float,
    steady: float = 0.0,
) -> timedelta:
    """The look-ahead for jobs due in whole seconds from now: ``due_by_second`` gives, for
    some second counts y (ascending or not), how many jobs are due in ``(y - 1, y]`` seconds;
    ``steady``: the runs claimed a second in steady state (``SteadyFlow``)."""
    counts = sorted(due_by_second)
    capacity = max(rate, STEADY_HEADROOM * steady)
    base_s = base.total_seconds()
    limit = horizon.total_seconds()
    reach = base_s
    due = 0
    for second, count in counts:
        if second > limit:
            break
        due += count
        if due / capacity >= second - base_s:
            reach = max(reach, float(second))
    return timedelta(seconds=min(max(reach, base_s), max(limit, base_s)))


class SteadyFlow:
    """The runs a scheduler claimed, counted by the whole second (Unix time) of their effective
    time. ``per_second`` is the median count of the seconds just ahead, all of them claimed
    already (they lie within the base look-ahead): known from the first pass, and a herd's
    second among them does not count. Once ``past`` seconds have gone by since the first, it
    is at most the median of those gone by too: a herd due over several of the few seconds
    ahead does not count as a flow either."""

    def __init__(self, past: int = PAST_SECONDS) -> None:
        self._past = past
        self._counts: dict[int, int] = {}
        self._since: int | None = None

    def add(self, by_second: Mapping[int, int]) -> None:
        for second, count in by_second.items():
            self._counts[second] = self._counts.get(second, 0) + count
        if by_second and self._since is None:
            self._since = min(by_second)

    def per_second(self, now: int, ahead: int) -> float:
        """The median runs a second due in ``(now, now + ahead]``, and at most that of the
        ``past`` seconds up to ``now`` once they have all been seen; older counts are dropped."""
        for second in [s for s in self._counts if s <= now - self._past]:
            del self._counts[second]
        if ahead < 1:
            return 0.0
        flow = self._median(range(now + 1, now + ahead + 1))
        if self._since is not None and now - self._since >= self._past:
            flow = min(flow, self._median(range(now - self._past + 1, now + 1)))
        return flow

    def _median(self, seconds: range) -> float:
        return float(statistics.median(self._counts.get(s, 0) for s in seconds))
