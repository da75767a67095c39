"""Where a job's schedule ends: after its ``end_time`` (the time function has no occurrence
past it, ``schedule/next_fire.py``), or at its ``max_runs``-th run. Reaching either completes
the job (COMPLETED, with ``end_reason`` as its state reason).

What max_runs counts (``JobRecord.scheduled_runs``, kept by the claims): each occurrence a
claim hands over to run, QUEUED or held WAITING by the team's quota, whatever then becomes of
it (it may fail, be dead-lettered, or be skipped by the overlap policy when it starts). Not
counted: occurrences recorded MISSED or SKIPPED instead of run (misfire, DST gap, pause, a
schedule change), and runs started by TriggerJob. Temporal's limited actions count the same
way, the actions taken, except that its overlap policy is decided before the action, so a
skipped action does not count there; Duetime decides overlap when the run starts, after the
claim that counted it. The count is the job's whole life: an update never resets it.
"""

from __future__ import annotations

from datetime import UTC, datetime

from duetime_core.jobspec import Every, JobSpec, ScheduleSpec
from duetime_core.schedule.model import Cron


def end_time_of(spec: ScheduleSpec) -> datetime | None:
    """A series' end_time (None: none, or a one-off)."""
    return spec.end_time if isinstance(spec, Every | Cron) else None


def has_end(spec: JobSpec) -> bool:
    return spec.max_runs is not None or end_time_of(spec.schedule) is not None


def runs_left(spec: JobSpec, made: int) -> int | None:
    """How many more runs the schedule may make after ``made``; None: no limit."""
    if spec.max_runs is None:
        return None
    return max(0, spec.max_runs - made)


def _instant(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def end_reason(spec: JobSpec, made: int) -> str:
    """Why a job whose schedule has nothing more to run after ``made`` runs is COMPLETED;
    ``""`` for a one-off (done after its one run)."""
    if runs_left(spec, made) == 0:
        return f"the schedule ended: it made {made} runs, max_runs is {spec.max_runs}"
    end = end_time_of(spec.schedule)
    if end is not None:
        return f"the schedule ended: no occurrence is left by its end_time, {_instant(end)}"
    return ""


def past_the_end(spec: JobSpec, made: int, nominal: datetime) -> bool:
    """Whether the next run, at ``nominal``, is past the schedule's end after ``made`` runs."""
    end = end_time_of(spec.schedule)
    return runs_left(spec, made) == 0 or (end is not None and nominal > end)
