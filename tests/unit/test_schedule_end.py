"""A schedule's end in the claim's rules: max_runs counts the runs handed over to run, end_time
stops the series, and the claim that plans the last run completes the job, with its reason."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta

from duetime_core.claim_plan import ClaimPlan, plan_claim
from duetime_core.ending import end_reason, past_the_end, runs_left
from duetime_core.jobspec import (
    Every,
    HttpMethod,
    HttpTarget,
    JobSpec,
    JobState,
    MisfirePolicy,
    MisfireSettings,
    same_series,
    updated_schedule,
)
from duetime_core.planning import Occurrence, first_occurrence
from duetime_core.preview import job_preview
from duetime_core.records import RunReason, RunState
from duetime_core.resume import catch_up_forecast
from duetime_core.schedule.model import Cron, GapPolicy

JOB = uuid.UUID("00000000-0000-0000-0000-000000000002")
T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
LOOKAHEAD = timedelta(seconds=5)
TARGET = HttpTarget(HttpMethod.POST, "https://x.test/")


def every_minute(
    *, max_runs: int | None = None, end: datetime | None = None, policy: MisfirePolicy | None = None
) -> JobSpec:
    return JobSpec(
        display_name="",
        schedule=Every(MINUTE, None, T0, end_time=end),
        target=TARGET,
        misfire=MisfireSettings(policy=policy or MisfirePolicy.RUN_ONCE),
        max_runs=max_runs,
    )


def at(t: datetime) -> Occurrence:
    return Occurrence(t, t)


def claims(spec: JobSpec, until: datetime, made: int = 0) -> tuple[list[ClaimPlan], int]:
    """The scheduler's claims on time, one a minute from T0, until the job leaves ACTIVE or the
    clock passes ``until``; and the runs its schedule then made."""
    plans: list[ClaimPlan] = []
    pending: Occurrence | None = at(T0)
    while pending is not None and pending.nominal_time <= until:
        plan = plan_claim(JOB, spec, pending, pending.nominal_time, LOOKAHEAD, made)
        plans.append(plan)
        made += len(plan.made)
        pending = plan.next if plan.state is JobState.ACTIVE else None
    return plans, made


def test_max_runs_3_makes_three_runs_and_the_third_claim_completes_the_job() -> None:
    plans, made = claims(every_minute(max_runs=3), T0 + timedelta(hours=1))
    assert [[r.nominal_time for r in p.runs] for p in plans] == [
        [T0],
        [T0 + MINUTE],
        [T0 + 2 * MINUTE],
    ]
    assert made == 3
    assert [p.state for p in plans] == [JobState.ACTIVE, JobState.ACTIVE, JobState.COMPLETED]
    assert plans[-1].next is None
    assert plans[-1].state_reason == "the schedule ended: it made 3 runs, max_runs is 3"


def test_a_claim_queueing_ahead_stops_at_the_last_run() -> None:
    spec = dataclasses.replace(
        every_minute(max_runs=5), schedule=Every(timedelta(seconds=1), None, T0)
    )
    plan = plan_claim(JOB, spec, at(T0), T0, timedelta(seconds=30), made=2)
    assert [r.nominal_time for r in plan.runs] == [T0 + timedelta(seconds=s) for s in range(3)]
    assert (plan.state, plan.next) == (JobState.COMPLETED, None)
    assert [r.nominal_time for r in plan.made] == [r.nominal_time for r in plan.runs]


def test_missed_occurrences_do_not_count_and_catch_up_runs_do() -> None:
    # Down for an hour under SKIP: 60 MISSED, none counted; the on-time one is the first run.
    skip = every_minute(max_runs=2, policy=MisfirePolicy.SKIP)
    plan = plan_claim(JOB, skip, at(T0), T0 + timedelta(hours=1, seconds=30), LOOKAHEAD)
    assert [(r.state, r.occurrence_count) for r in plan.runs] == [
        (RunState.MISSED, 60),
        (RunState.QUEUED, 1),
    ]
    assert (len(plan.made), plan.state) == (1, JobState.ACTIVE)
    # Under RUN_ALL, caught-up runs count: with one run left, the oldest one runs and ends it.
    run_all = every_minute(max_runs=3, policy=MisfirePolicy.RUN_ALL)
    plan = plan_claim(JOB, run_all, at(T0), T0 + 10 * MINUTE, LOOKAHEAD, made=2)
    assert [(r.state, r.nominal_time) for r in plan.runs] == [(RunState.QUEUED, T0)]
    assert plan.state is JobState.COMPLETED


def test_end_time_completes_the_job_in_the_claim_of_its_last_occurrence() -> None:
    end = T0 + 2 * MINUTE + timedelta(seconds=30)
    plans, made = claims(every_minute(end=end), T0 + timedelta(hours=1))
    assert [r.nominal_time for p in plans for r in p.runs] == [T0, T0 + MINUTE, T0 + 2 * MINUTE]
    assert made == 3
    assert plans[-1].state is JobState.COMPLETED
    assert plans[-1].state_reason == (
        "the schedule ended: no occurrence is left by its end_time, 2026-06-01T12:02:30Z"
    )
    # An occurrence at the end itself runs.
    plans, _ = claims(every_minute(end=T0 + 2 * MINUTE), T0 + timedelta(hours=1))
    assert [r.nominal_time for p in plans for r in p.runs][-1] == T0 + 2 * MINUTE


def test_a_late_claim_applies_the_misfire_policy_up_to_the_end_only() -> None:
    end = T0 + 10 * MINUTE
    plan = plan_claim(JOB, every_minute(end=end), at(T0), T0 + timedelta(hours=2), LOOKAHEAD)
    assert [(r.state, r.nominal_time, r.occurrence_count) for r in plan.runs] == [
        (RunState.MISSED, T0, 10),
        (RunState.QUEUED, end, 1),  # RUN_ONCE: the latest before the end, once
    ]
    assert plan.state is JobState.COMPLETED


def test_a_dst_gap_skipped_before_the_end_is_still_recorded() -> None:
    # 02:30 daily in New York under SKIP, ending on 2026-03-09: the 8th has no 02:30.
    mar7 = datetime(2026, 3, 7, 7, 30, tzinfo=UTC)  # 02:30 EST
    mar9 = datetime(2026, 3, 9, 6, 30, tzinfo=UTC)  # 02:30 EDT
    cron = Cron("30 2 * * *", "America/New_York", gap=GapPolicy.SKIP, end_time=mar9)
    spec = JobSpec(display_name="", schedule=cron, target=TARGET)
    plan = plan_claim(JOB, spec, at(mar7), mar9 + MINUTE, LOOKAHEAD)
    assert [(r.state, r.reason, r.nominal_time) for r in plan.runs] == [
        (RunState.MISSED, RunReason.MISFIRE, mar7),
        (RunState.QUEUED, RunReason.NONE, mar9),
        (RunState.SKIPPED, RunReason.DST_GAP, datetime(2026, 3, 8, 7, 0, tzinfo=UTC)),
    ]
    assert plan.state is JobState.COMPLETED


def test_a_job_whose_runs_are_all_made_plans_nothing() -> None:
    plan = plan_claim(JOB, every_minute(max_runs=2), at(T0), T0, LOOKAHEAD, made=3)
    assert (plan.runs, plan.next, plan.state) == ([], None, JobState.COMPLETED)
    assert plan.state_reason == "the schedule ended: it made 3 runs, max_runs is 2"


def test_the_next_run_and_previews_respect_both_ends() -> None:
    spec = every_minute(max_runs=4, end=T0 + 10 * MINUTE)
    assert first_occurrence(JOB, spec, T0, made=4) is None
    assert [i.nominal_time for i in job_preview(JOB, spec, 1, T0, 10)] == [
        T0 + k * MINUTE for k in (1, 2, 3)
    ]
    assert len(job_preview(JOB, every_minute(end=T0 + 10 * MINUTE), 0, T0, 100)) == 10
    assert runs_left(spec, 1) == 3
    assert runs_left(every_minute(), 1000) is None
    assert past_the_end(spec, 0, T0 + 11 * MINUTE)
    assert past_the_end(spec, 4, T0)
    assert not past_the_end(spec, 3, T0 + 10 * MINUTE)
    assert end_reason(dataclasses.replace(spec, schedule=Every(MINUTE, None, T0)), 0) == ""


def test_a_catch_up_resume_is_forecast_within_the_runs_left() -> None:
    spec = every_minute(max_runs=5, policy=MisfirePolicy.RUN_ALL)
    forecast = catch_up_forecast(JOB, spec, at(T0), T0 + 30 * MINUTE, made=3)
    assert [o.nominal_time for o in forecast.catch_up] == [T0, T0 + MINUTE]


def test_an_update_of_the_end_alone_keeps_the_series() -> None:
    stored = Every(MINUTE, None, T0)
    written = Every(MINUTE, None, T0 + timedelta(days=1), end_time=T0 + timedelta(days=2))
    assert same_series(stored, written)
    assert updated_schedule(stored, written) == dataclasses.replace(
        stored, end_time=T0 + timedelta(days=2)
    )
    moved = Every(2 * MINUTE, None, T0 + timedelta(days=1))
    assert updated_schedule(stored, moved) == moved
    cron = Cron("0 * * * *", "UTC")
    assert same_series(cron, dataclasses.replace(cron, end_time=T0))
    assert not same_series(cron, Cron("0 * * * *", "Europe/Paris"))
