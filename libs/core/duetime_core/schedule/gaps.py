"""The shortest time between consecutive occurrences, to bound a job's jitter window.

A jitter window at least that long could reorder a job's runs or let two share an instant, so
the API rejects it. For cron the answer is sampled: the next occurrences (up to a thousand, or
five years), plus the neighbourhood of every DST transition in those years, because that is
where gaps shrink -- both passes of a repeated hour, a 30-minute Lord Howe fold under an
hourly job, a shifted gap time landing just before the next regular one.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import assert_never

from duetime_core.errors import InvalidArgument
from duetime_core.schedule.dst import transitions_between
from duetime_core.schedule.model import Cron, Interval, OneOff, Schedule
from duetime_core.schedule.next_fire import compile_cron_schedule, next_fire_time

_SAMPLE_COUNT = 1000
_SAMPLE_SPAN = timedelta(days=5 * 365 + 1)
_PER_TRANSITION_LIMIT = 5000
# Cron resolves to whole seconds, so no two distinct occurrences are closer than this.
_FINEST = timedelta(seconds=1)


def shortest_gap(schedule: Schedule, after: datetime) -> timedelta | None:
    """The shortest gap between consecutive occurrences after ``after``; None for a one-off
    or a cron schedule with fewer than two occurrences left."""
    if after.tzinfo is None or after.utcoffset() is None:
        raise ValueError("after must be an aware datetime")
    match schedule:
        case OneOff():
            return None
        case Interval(every=every):
            return every
        case Cron():
            return _cron_shortest_gap(schedule, after)
        case _:
            assert_never(schedule)


def _cron_shortest_gap(cron: Cron, after: datetime) -> timedelta | None:
    _, zone, violations = compile_cron_schedule(cron)
    if zone is None or violations:
        raise InvalidArgument(violations)
    after = after.astimezone(UTC)
    horizon = after + _SAMPLE_SPAN
    times = _sample(cron, after, limit=_SAMPLE_COUNT, until=horizon, at_least=2)
    shortest = _smallest_step(times)
    if shortest is None or shortest <= _FINEST:
        return shortest
    for change in transitions_between(after, max(horizon, times[-1]), zone):
        reach = change.at + abs(change.offset_after - change.offset_before)
        # A gap shorter than the best so far that involves the transition has an end within
        # ``shortest`` before it, so sampling from there sees it.
        start = change.at - shortest
        around = _sample(cron, start, limit=_PER_TRANSITION_LIMIT, until=reach, at_least=3)
        step = _smallest_step(around)
        if step is not None and step < shortest:
            shortest = step
            if shortest <= _FINEST:
                break
    return shortest


def _sample(
    cron: Cron, after: datetime, *, limit: int, until: datetime, at_least: int
) -> list[datetime]:
    """Occurrences after ``after`` until one passes ``until`` (and ``at_least`` were seen),
    or ``limit`` of them."""
    found: list[datetime] = []
    moment = next_fire_time(cron, after)
    while moment is not None:
        found.append(moment)
        if len(found) >= limit or (moment > until and len(found) >= at_least):
            break
        moment = next_fire_time(cron, moment)
    return found


def _smallest_step(times: list[datetime]) -> timedelta | None:
    if len(times) < 2:
        return None
    return min(later - earlier for earlier, later in itertools.pairwise(times))
