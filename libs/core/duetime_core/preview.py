"""Schedule preview: the next occurrences with what DST did to each, for users to inspect.

The times come from the same ``next_fire_time`` the scheduler uses; this module only explains
them on the schedule's wall clock, and marks those a calendar of the job excludes as it is now
(the claim will record them SKIPPED, CALENDAR, unless the calendar changes before).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from duetime_core.calendars import CalendarRules, excluded_by
from duetime_core.ending import runs_left
from duetime_core.jobspec import AtLocal, JobSpec, ScheduleSpec, to_schedule
from duetime_core.planning import effective_time
from duetime_core.runkey import RunKey
from duetime_core.schedule import next_fire_time
from duetime_core.schedule.cron_match import compile_cron
from duetime_core.schedule.model import Cron, OneOff

MAX_PREVIEW = 1000


class DstAdjustment(enum.StrEnum):
    NONE = "NONE"
    SHIFTED = "SHIFTED"
    FOLD_FIRST_PASS = "FOLD_FIRST_PASS"
    FOLD_SECOND_PASS = "FOLD_SECOND_PASS"


@dataclass(frozen=True)
class PreviewItem:
    nominal_time: datetime
    effective_time: datetime | None
    local_time: str
    dst_adjustment: DstAdjustment
    # The id of the job's calendar that excludes it ("": none does, it runs).
    excluded_by: str = ""


def zone_of(spec: ScheduleSpec) -> str:
    """The zone a schedule's wall clock is read in (UTC for one without)."""
    match spec:
        case Cron(time_zone=zone) | AtLocal(time_zone=zone):
            return zone
        case _:
            return "UTC"


def dst_adjustment(spec: ScheduleSpec, local: datetime) -> DstAdjustment:
    """What DST did to an occurrence of ``spec`` at ``local`` (aware, in the schedule's zone)."""
    other = local.replace(fold=1 - local.fold)
    if other.utcoffset() != local.utcoffset():
        return DstAdjustment.FOLD_SECOND_PASS if local.fold else DstAdjustment.FOLD_FIRST_PASS
    wall = local.replace(tzinfo=None)
    if isinstance(spec, Cron):
        if compile_cron(spec.expression).first_at_or_after(wall) != wall:
            return DstAdjustment.SHIFTED
    elif isinstance(spec, AtLocal) and spec.local_time != wall:
        return DstAdjustment.SHIFTED
    return DstAdjustment.NONE


def preview_item(
    spec: ScheduleSpec,
    nominal: datetime,
    job: tuple[uuid.UUID, JobSpec] | None = None,
    calendars: Sequence[tuple[str, CalendarRules]] = (),
) -> PreviewItem:
    """An occurrence at ``nominal`` as a preview shows it; with a job, its effective time;
    which of ``calendars`` excludes it."""
    effective = None
    if job is not None:
        effective = effective_time(job[1], RunKey.scheduled(job[0], nominal))
    local = nominal.astimezone(ZoneInfo(zone_of(spec)))
    return PreviewItem(
        nominal_time=nominal.astimezone(UTC),
        effective_time=effective,
        local_time=local.isoformat(),
        dst_adjustment=dst_adjustment(spec, local),
        excluded_by=excluded_by(calendars, nominal) or "",
    )


def preview(
    spec: ScheduleSpec,
    after: datetime,
    count: int,
    *,
    job: tuple[uuid.UUID, JobSpec] | None = None,
    left: int | None = None,
    calendars: Sequence[tuple[str, CalendarRules]] = (),
) -> list[PreviewItem]:
    """Up to ``count`` occurrences strictly after ``after``, and at most ``left`` (the runs
    max_runs leaves the schedule, ``duetime_core.ending``: excluded occurrences are shown but
    not counted there, as they make no run); with a job, their effective times; each marked
    with the calendar of ``calendars`` that excludes it."""
    schedule = to_schedule(spec)
    items: list[PreviewItem] = []
    cursor = after
    if isinstance(schedule, OneOff):
        # A one-off not yet run still shows its time, even if that is in the past.
        cursor = min(after, schedule.at - timedelta(microseconds=1))
    count = min(count, MAX_PREVIEW)
    while len(items) < count and (left is None or left > 0):
        nominal = next_fire_time(schedule, cursor)
        if nominal is None:
            break
        item = preview_item(spec, nominal, job, calendars)
        items.append(item)
        if left is not None and not item.excluded_by:
            left -= 1
        cursor = nominal
    return items


def job_preview(
    job_id: uuid.UUID,
    spec: JobSpec,
    made: int,
    after: datetime,
    count: int,
    calendars: Sequence[tuple[str, CalendarRules]] = (),
) -> list[PreviewItem]:
    """A job's next ``count`` occurrences strictly after ``after``, with their effective times,
    within the runs its schedule has left after ``made`` (``duetime_core.ending``), marked
    with the job's ``calendars`` that exclude them."""
    return preview(
        spec.schedule,
        after,
        count,
        job=(job_id, spec),
        left=runs_left(spec, made),
        calendars=calendars,
    )
