"""Schedule preview: the next occurrences with what DST did to each, for users to inspect.

The times come from the same ``next_fire_time`` the scheduler uses; this module only explains
them on the schedule's wall clock.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

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
    spec: ScheduleSpec, nominal: datetime, job: tuple[uuid.UUID, JobSpec] | None = None
) -> PreviewItem:
    """An occurrence at ``nominal`` as a preview shows it; with a job, its effective time."""
    effective = None
    if job is not None:
        effective = effective_time(job[1], RunKey.scheduled(job[0], nominal))
    local = nominal.astimezone(ZoneInfo(zone_of(spec)))
    return PreviewItem(
        nominal_time=nominal.astimezone(UTC),
        effective_time=effective,
        local_time=local.isoformat(),
        dst_adjustment=dst_adjustment(spec, local),
    )


def preview(
    spec: ScheduleSpec,
    after: datetime,
    count: int,
    *,
    job: tuple[uuid.UUID, JobSpec] | None = None,
    left: int | None = None,
) -> list[PreviewItem]:
    """Up to ``count`` occurrences strictly after ``after``, and at most ``left`` (the runs
    max_runs leaves the schedule, ``duetime_core.ending``); with a job, their effective times."""
    schedule = to_schedule(spec)
    items: list[PreviewItem] = []
    cursor = after
    if isinstance(schedule, OneOff):
        # A one-off not yet run still shows its time, even if that is in the past.
        cursor = min(after, schedule.at - timedelta(microseconds=1))
    count = min(count, MAX_PREVIEW) if left is None else min(count, MAX_PREVIEW, left)
    while len(items) < count:
        nominal = next_fire_time(schedule, cursor)
        if nominal is None:
            break
        items.append(preview_item(spec, nominal, job))
        cursor = nominal
    return items


def job_preview(
    job_id: uuid.UUID, spec: JobSpec, made: int, after: datetime, count: int
) -> list[PreviewItem]:
    """A job's next ``count`` occurrences strictly after ``after``, with their effective times,
    within the runs its schedule has left after ``made`` (``duetime_core.ending``)."""
    return preview(spec.schedule, after, count, job=(job_id, spec), left=runs_left(spec, made))
