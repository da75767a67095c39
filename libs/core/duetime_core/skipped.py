"""Occurrences that will never be claimed, because the job's next run time moved past them (a
resume, a new schedule, a DST gap under SKIP): each stretch is recorded as one SKIPPED range,
so that nothing is skipped silently."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from duetime_core.claim_plan import dst_gap_skips
from duetime_core.planning import Occurrence, next_nominal
from duetime_core.schedule.model import Schedule

# Paused stretches longer than this many occurrences are recorded as one range up to the last
# one enumerated; the cap keeps a resume of an every-second job paused for weeks bounded.
MAX_SKIPPED_ENUMERATION = 100_000


@dataclass(frozen=True)
class SkippedSpan:
    """The first and last occurrence of a skipped stretch, and how many it holds."""

    first: datetime
    last: datetime
    count: int


def skipped_between(schedule: Schedule, start: datetime, now: datetime) -> SkippedSpan | None:
    """The occurrences from ``start`` (inclusive) to ``now``; None if there are none. Raises
    ScheduleError when the schedule cannot be evaluated."""
    first: datetime | None = None
    last: datetime | None = None
    count = 0
    cursor = start - timedelta(microseconds=1)
    while count < MAX_SKIPPED_ENUMERATION:
        nominal = next_nominal(schedule, cursor)
        if nominal is None or nominal > now:
            break
        first = first or nominal
        last, cursor, count = nominal, nominal, count + 1
    if first is None or last is None:
        return None
    return SkippedSpan(first, last, count)


def dst_gap_span(schedule: Schedule, now: datetime, first: Occurrence | None) -> SkippedSpan | None:
    """The occurrences a SKIP-gap job scheduled from ``now`` already jumped over to reach its
    ``first`` run: no claim will ever see them."""
    if first is None:
        return None
    gaps = dst_gap_skips(schedule, now, first.nominal_time)
    if not gaps:
        return None
    return SkippedSpan(gaps[0], gaps[-1], len(gaps))
