"""Backfill: which past occurrences of a job a BackfillJob request runs, decided from plain
values (the store writes them).

The occurrences are the job's current schedule's (zone, DST gap and fold policies included)
with a nominal time in ``[start, end)``, found with the same ``next_fire_time`` the scheduler
uses. A backfill names its own range: the schedule's ``end_time`` and ``max_runs`` do not cut
it, while an interval's anchor still begins the series. The job's calendars do apply: an
occurrence on a day one of them excludes (as it is at the request) is not run but recorded
SKIPPED (CALENDAR), as the claim records it.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from duetime_core.calendars import CalendarRules, excluded_by
from duetime_core.errors import InvalidArgument
from duetime_core.jobspec import ScheduleSpec, instant_problem, to_schedule
from duetime_core.planning import next_nominal
from duetime_core.schedule.model import Cron, Interval, Schedule

# The most occurrences one request may run: a larger range is refused, to be split.
MAX_BACKFILL_RUNS = 10_000
# The longest range one request may name.
MAX_BACKFILL_SPAN = timedelta(days=3660)
# How far past the cap a refused range is still counted, so the error can say how many.
_COUNTED = 2 * MAX_BACKFILL_RUNS
_BEFORE = timedelta(microseconds=1)


class BackfillOverlap(enum.StrEnum):
    ALL = "ALL"
    SKIP_RAN = "SKIP_RAN"
    ONE_AT_A_TIME = "ONE_AT_A_TIME"


@dataclass(frozen=True)
class BackfillRange:
    start: datetime
    end: datetime


@dataclass(frozen=True)
class BackfillPlan:
    """The occurrences in the range, in nominal order, those of them to run, and those a
    calendar excludes (each with the calendar's id)."""

    occurrences: tuple[datetime, ...]
    runs: tuple[datetime, ...]
    excluded: tuple[tuple[datetime, str], ...] = ()

    @property
    def skipped(self) -> int:
        """Left out because they ran (SKIP_RAN)."""
        return len(self.occurrences) - len(self.runs) - len(self.excluded)


def check_range(start: datetime | None, end: datetime | None, now: datetime) -> BackfillRange:
    """The range asked for, or INVALID_ARGUMENT naming the field that is wrong."""
    if start is None:
        raise InvalidArgument.field("start_time", "required")
    if end is None:
        raise InvalidArgument.field("end_time", "required")
    problem = instant_problem(start)
    if problem is not None:
        raise InvalidArgument.field("start_time", problem)
    if end <= start:
        raise InvalidArgument.field("end_time", "must be after start_time")
    if end > now:
        raise InvalidArgument.field(
            "end_time",
            f"must not be in the future (now is {now.isoformat()}): the schedule runs those",
        )
    if end - start > MAX_BACKFILL_SPAN:
        raise InvalidArgument.field(
            "end_time", f"the range must span at most {MAX_BACKFILL_SPAN.days} days"
        )
    return BackfillRange(start, end)


def _unending(schedule: Schedule) -> Schedule:
    if isinstance(schedule, Interval | Cron):
        return dataclasses.replace(schedule, end_time=None)
    return schedule


def occurrences_in(spec: ScheduleSpec, span: BackfillRange) -> tuple[datetime, ...]:
    """The schedule's nominal times in ``[span.start, span.end)``, at most
    ``MAX_BACKFILL_RUNS``; more is INVALID_ARGUMENT on ``end_time`` with the count."""
    schedule = _unending(to_schedule(spec))
    found: list[datetime] = []
    moment = next_nominal(schedule, span.start - _BEFORE)
    while moment is not None and moment < span.end and len(found) < _COUNTED:
        found.append(moment)
        moment = next_nominal(schedule, moment)
    if len(found) > MAX_BACKFILL_RUNS:
        more = moment is not None and moment < span.end
        count = f"more than {_COUNTED}" if more else str(len(found))
        raise InvalidArgument.field(
            "end_time",
            f"the range holds {count} occurrences; at most {MAX_BACKFILL_RUNS} a request: "
            "split the range",
        )
    return tuple(found)


def plan_backfill(
    occurrences: tuple[datetime, ...],
    overlap: BackfillOverlap,
    ran: Collection[datetime],
    calendars: Sequence[tuple[str, CalendarRules]] = (),
) -> BackfillPlan:
    """The runs to make: every occurrence no calendar of ``calendars`` excludes, or, under
    SKIP_RAN, those of them not in ``ran`` (the nominal times that have a run that succeeded
    or is active)."""
    excluded: list[tuple[datetime, str]] = []
    kept: list[datetime] = []
    for moment in occurrences:
        by = excluded_by(calendars, moment)
        if by is None:
            kept.append(moment)
        else:
            excluded.append((moment, by))
    done = set(ran) if overlap is BackfillOverlap.SKIP_RAN else set()
    return BackfillPlan(occurrences, tuple(t for t in kept if t not in done), tuple(excluded))
