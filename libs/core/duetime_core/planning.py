"""The next occurrence of a job: nominal time from the schedule, effective time with jitter."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from duetime_core.ending import runs_left
from duetime_core.jobspec import JobSpec, to_schedule
from duetime_core.runkey import RunKey
from duetime_core.schedule import jitter_offset, next_fire_time
from duetime_core.schedule.model import OneOff, Schedule


@dataclass(frozen=True)
class Occurrence:
    nominal_time: datetime
    effective_time: datetime


class ScheduleError(Exception):
    """The next fire time cannot be computed; the job goes to ERROR with this reason."""


def effective_time(spec: JobSpec, key: RunKey) -> datetime:
    return key.nominal_time + jitter_offset(key.canonical(), spec.jitter_window)


def next_nominal(schedule: Schedule, after: datetime) -> datetime | None:
    """``next_fire_time``, with any failure to evaluate the schedule as a ScheduleError."""
    try:
        return next_fire_time(schedule, after)
    except Exception as error:  # a schedule that cannot be evaluated must not fail its caller
        raise ScheduleError(f"cannot compute the next fire time: {error}") from error


def next_occurrence(
    job_id: uuid.UUID, spec: JobSpec, after: datetime, made: int = 0
) -> Occurrence | None:
    """The first scheduled occurrence strictly after ``after``; None when the schedule is done
    (a one-off past, a series past its end_time, or its max_runs reached by ``made`` runs)."""
    if runs_left(spec, made) == 0:
        return None
    nominal = next_nominal(to_schedule(spec.schedule), after)
    if nominal is None:
        return None
    return Occurrence(nominal, effective_time(spec, RunKey.scheduled(job_id, nominal)))


def first_occurrence(
    job_id: uuid.UUID, spec: JobSpec, now: datetime, made: int = 0
) -> Occurrence | None:
    """A new or rescheduled job's first occurrence (``made``: the runs its schedule made so
    far). A one-off in the past still runs once (the misfire policy then decides), so it is
    searched from just before its own time."""
    schedule = to_schedule(spec.schedule)
    if isinstance(schedule, OneOff):
        nominal = schedule.at
        return Occurrence(nominal, effective_time(spec, RunKey.scheduled(job_id, nominal)))
    return next_occurrence(job_id, spec, now, made)
