"""What claiming a due job produces: runs to queue, records of what will not run, the next time.

Pure rules, applied by the scheduler inside its claim transaction. An occurrence is on time
while its effective time is no more than the misfire threshold in the past; older ones misfired
(the fleet was down, or claims fell behind) and follow the job's misfire policy:

* RUN_ONCE: the latest misfired occurrence runs, unless an on-time one exists; the rest MISSED.
* SKIP: every misfired occurrence is MISSED.
* RUN_ALL: misfired occurrences within the catch-up age, at most the catch-up count (the most
  recent ones), run oldest first at catch-up priority; the rest MISSED.

MISSED stretches become one record per range: a range holds exactly the occurrences its record
counts, so one is cut where a calendar's SKIPPED record lies inside it. Under
DST_GAP_POLICY_SKIP, occurrences dropped by a spring-forward gap are recorded as SKIPPED
(DST_GAP) at the instant the gap ends.

A schedule that ends (``duetime_core.ending``) completes the job in the claim that plans its
last run: the one at or before its end_time, or the one that makes max_runs runs. Nothing after
that end is planned or recorded.

An occurrence on a day one of the job's calendars excludes (``duetime_core.calendars``) is
recorded SKIPPED (CALENDAR, the calendar's id as detail) before the misfire policy looks at the
rest: it never runs, and it is neither missed nor counted toward max_runs. Each stretch of
consecutive occurrences excluded by the same calendar is one record.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence, Set
from dataclasses import dataclass
from datetime import datetime, timedelta

from duetime_core.calendars import CalendarRules, excluded_by
from duetime_core.ending import end_reason, end_time_of, runs_left
from duetime_core.jobspec import JobSpec, JobState, MisfirePolicy, to_schedule
from duetime_core.planning import Occurrence, ScheduleError, effective_time
from duetime_core.records import RunReason, RunState
from duetime_core.runkey import RunKey
from duetime_core.schedule import is_fixed_time, next_fire_time
from duetime_core.schedule.model import Cron, GapPolicy, Schedule

# Occurrences examined per job per claim; a longer backlog (an every-second job after a week's
# outage) is worked off over several claims, each recording its part.
MAX_EXAMINED = 10_000
# On-time occurrences queued per job per claim, for jobs firing faster than the look-ahead.
MAX_QUEUED_AHEAD = 20
_JUST_AFTER = timedelta(microseconds=1)


@dataclass(frozen=True)
class PlannedRun:
    nominal_time: datetime
    effective_time: datetime
    state: RunState
    reason: RunReason = RunReason.NONE
    range_end_time: datetime | None = None
    occurrence_count: int = 1
    # Misfired occurrences caught up under RUN_ALL are dispatched behind current work.
    catch_up: bool = False
    # What the record's reason needs said: for CALENDAR, the calendar's id.
    detail: str = ""


@dataclass(frozen=True)
class ClaimPlan:
    runs: list[PlannedRun]
    next: Occurrence | None
    state: JobState
    state_reason: str = ""

    @property
    def made(self) -> list[PlannedRun]:
        """The runs handed over to run, in time order: what max_runs counts."""
        return sorted(
            (run for run in self.runs if run.state is RunState.QUEUED),
            key=lambda run: run.nominal_time,
        )


def _record(
    reason: RunReason, state: RunState, times: list[datetime], detail: str = ""
) -> PlannedRun:
    return PlannedRun(
        nominal_time=times[0],
        effective_time=times[0],
        state=state,
        reason=reason,
        range_end_time=times[-1] if len(times) > 1 else None,
        occurrence_count=len(times),
        detail=detail,
    )


def calendar_skips(
    calendars: Sequence[tuple[str, CalendarRules]], due: list[Occurrence]
) -> tuple[list[Occurrence], list[PlannedRun]]:
    """``due`` split into the occurrences no calendar excludes and the SKIPPED (CALENDAR)
    records of the rest: one per stretch of consecutive occurrences one calendar excludes."""
    if not calendars:
        return due, []
    kept: list[Occurrence] = []
    records: list[PlannedRun] = []
    stretch: list[datetime] = []
    stretch_by = ""
    for occurrence in due:
        by = excluded_by(calendars, occurrence.nominal_time)
        if stretch and by != stretch_by:
            records.append(_record(RunReason.CALENDAR, RunState.SKIPPED, stretch, stretch_by))
            stretch = []
        if by is None:
            kept.append(occurrence)
        else:
            stretch.append(occurrence.nominal_time)
            stretch_by = by
    if stretch:
        records.append(_record(RunReason.CALENDAR, RunState.SKIPPED, stretch, stretch_by))
    return kept, records


def dst_gap_skips(
    schedule: Schedule, after: datetime, before: datetime, kept: Set[datetime] = frozenset()
) -> list[datetime]:
    """Instants of occurrences that DST_GAP_POLICY_SKIP dropped in (after, before), given the
    occurrences it ``kept`` there."""
    if not (
        isinstance(schedule, Cron)
        and schedule.gap is GapPolicy.SKIP
        and is_fixed_time(schedule.expression)
    ):
        return []
    # The SHIFT variant fires at every occurrence SKIP keeps, plus one per gap it drops.
    shifted = dataclasses.replace(schedule, gap=GapPolicy.SHIFT)
    skipped: list[datetime] = []
    cursor = after
    for _ in range(MAX_EXAMINED + len(kept)):
        candidate = next_fire_time(shifted, cursor)
        if candidate is None or candidate >= before:
            break
        if candidate not in kept:
            skipped.append(candidate)
        cursor = candidate
    return skipped


def plan_claim(
    job_id: uuid.UUID,
    spec: JobSpec,
    pending: Occurrence,
    now: datetime,
    lookahead: timedelta,
    made: int = 0,
    calendars: Sequence[tuple[str, CalendarRules]] = (),
) -> ClaimPlan:
    """Claims ``pending`` (due: effective <= now + lookahead) and what follows it up to ``now``;
    ``made``: the runs the schedule made before (``duetime_core.ending``); ``calendars``: the
    job's excluded calendars as they are now, in its order."""
    left = runs_left(spec, made)
    if left == 0:
        return ClaimPlan([], None, JobState.COMPLETED, end_reason(spec, made))
    schedule = to_schedule(spec.schedule)
    horizon = now + lookahead
    late_before = now - spec.misfire.threshold
    due: list[Occurrence] = []
    current: Occurrence | None = pending
    on_time_count = 0
    error = ""
    while (
        current is not None
        and current.effective_time <= horizon
        and len(due) < MAX_EXAMINED
        and on_time_count < MAX_QUEUED_AHEAD
    ):
        due.append(current)
        on_time_count += current.effective_time >= late_before
        try:
            current = _following(job_id, spec, schedule, current)
        except ScheduleError as failure:
            current, error = None, str(failure)
    # `current` is now the first occurrence this claim does not consume.
    kept, excluded = calendar_skips(calendars, due)
    misfired = [o for o in kept if o.effective_time < late_before]
    on_time = [o for o in kept if o.effective_time >= late_before]
    if current is not None and current.effective_time < late_before:
        runs: list[PlannedRun] = []
        missed, current = _backlog(spec, misfired, current) if misfired else ([], current)
    else:
        missed, runs = _misfire_runs(spec, misfired, on_time, now)
        runs += [PlannedRun(o.nominal_time, o.effective_time, RunState.QUEUED) for o in on_time]
    last = _last_run(runs, left)
    if last is not None:
        # The schedule's last run: nothing after it runs or is recorded.
        current, error = None, ""
    # Only the stretch this claim consumes, [pending, bound): the next claim starts there.
    bound = _consumed_before(spec, current, last, error)
    gaps: list[datetime] = []
    if bound is not None:
        consumed = {o.nominal_time for o in due if o.nominal_time < bound}
        gaps = dst_gap_skips(schedule, pending.nominal_time, bound, consumed)
    cuts = [record.nominal_time for record in excluded] + gaps
    runs = _missed(missed, cuts) + runs
    if last is not None:
        runs = [r for r in runs if r.nominal_time <= last]
    runs += [r for r in excluded if bound is None or r.nominal_time < bound]
    if gaps:
        runs.append(_record(RunReason.DST_GAP, RunState.SKIPPED, gaps))
    if error:
        return ClaimPlan(runs, None, JobState.ERROR, error)
    if current is None:
        made += sum(run.state is RunState.QUEUED for run in runs)
        return ClaimPlan(runs, None, JobState.COMPLETED, end_reason(spec, made))
    return ClaimPlan(runs, current, JobState.ACTIVE)


def _last_run(runs: list[PlannedRun], left: int | None) -> datetime | None:
    """The time of the run that makes the schedule's max_runs, if this claim plans it."""
    if left is None:
        return None
    queued = sorted(run.nominal_time for run in runs if run.state is RunState.QUEUED)
    return queued[left - 1] if len(queued) >= left else None


def _consumed_before(
    spec: JobSpec, current: Occurrence | None, last: datetime | None, error: str
) -> datetime | None:
    """Where the stretch a claim consumes ends (exclusive): at the next claim's occurrence, just
    after the schedule's last run or end_time; None when unknown (an error, a one-off done)."""
    if last is not None:
        return last + _JUST_AFTER
    if current is not None:
        return current.nominal_time
    end = end_time_of(spec.schedule)
    return end + _JUST_AFTER if end is not None and not error else None


def _following(
    job_id: uuid.UUID, spec: JobSpec, schedule: Schedule, current: Occurrence
) -> Occurrence | None:
    try:
        nominal = next_fire_time(schedule, current.nominal_time)
    except Exception as failure:  # an unevaluable schedule errors the job, never the batch
        raise ScheduleError(f"cannot compute the next fire time: {failure}") from failure
    if nominal is None:
        return None
    return Occurrence(nominal, effective_time(spec, RunKey.scheduled(job_id, nominal)))


def _missed(times: list[datetime], cut_at: list[datetime]) -> list[PlannedRun]:
    """The MISSED records of the misfired ``times``: one per stretch between the instants
    ``cut_at`` (calendar records, occurrences a DST gap dropped), so that no MISSED range spans
    an occurrence it does not stand for."""
    cuts = sorted(cut_at)
    records: list[PlannedRun] = []
    stretch: list[datetime] = []
    passed = 0
    for time in times:
        before = passed
        while passed < len(cuts) and cuts[passed] < time:
            passed += 1
        if stretch and passed > before:
            records.append(_record(RunReason.MISFIRE, RunState.MISSED, stretch))
            stretch = []
        stretch.append(time)
    if stretch:
        records.append(_record(RunReason.MISFIRE, RunState.MISSED, stretch))
    return records


def _backlog(
    spec: JobSpec, misfired: list[Occurrence], following: Occurrence
) -> tuple[list[datetime], Occurrence]:
    """More misfired occurrences follow this claim's: the times to record MISSED, all but
    those the policy might still run (RUN_ONCE the latest, RUN_ALL the catch-up count), and
    the next claim resumed at the first kept one, so the policy is applied once the backlog's
    end is in view."""
    keep = {
        MisfirePolicy.SKIP: 0,
        MisfirePolicy.RUN_ONCE: 1,
        MisfirePolicy.RUN_ALL: spec.misfire.max_catch_up_runs,
    }[spec.misfire.policy]
    # Progress: the claim examined MAX_EXAMINED occurrences, more than any `keep`.
    keep = min(keep, len(misfired) - 1)
    cut = len(misfired) - keep
    missed = [o.nominal_time for o in misfired[:cut]]
    resume = misfired[cut] if keep > 0 else following
    return missed, resume


def _misfire_runs(
    spec: JobSpec, misfired: list[Occurrence], on_time: list[Occurrence], now: datetime
) -> tuple[list[datetime], list[PlannedRun]]:
    """Applies the misfire policy to a claim's misfired occurrences, the backlog's end in view:
    the times it misses, and the runs it makes."""
    if not misfired:
        return [], []
    policy = spec.misfire.policy
    times = [o.nominal_time for o in misfired]
    if policy is MisfirePolicy.SKIP or (policy is MisfirePolicy.RUN_ONCE and on_time):
        return times, []
    if policy is MisfirePolicy.RUN_ONCE:
        latest = misfired[-1]
        return times[:-1], [PlannedRun(latest.nominal_time, latest.effective_time, RunState.QUEUED)]
    # RUN_ALL: the most recent occurrences within the age and count bounds run; the rest MISSED.
    oldest_allowed = now - spec.misfire.max_catch_up_age
    recent = [o for o in misfired if o.nominal_time >= oldest_allowed]
    eligible = recent[-spec.misfire.max_catch_up_runs :]
    first_kept = eligible[0].nominal_time if eligible else None
    dropped = [t for t in times if first_kept is None or t < first_kept]
    runs = [
        PlannedRun(o.nominal_time, o.effective_time, RunState.QUEUED, catch_up=True)
        for o in eligible
    ]
    return dropped, runs
