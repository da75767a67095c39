"""Claim planning: on-time claims, misfire policies, backlogs, DST-gap records."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from duetime_core.claim_plan import MAX_EXAMINED, ClaimPlan, plan_claim
from duetime_core.jobspec import (
    AtInstant,
    Every,
    HttpMethod,
    HttpTarget,
    JobSpec,
    JobState,
    MisfirePolicy,
    MisfireSettings,
)
from duetime_core.planning import Occurrence
from duetime_core.records import RunReason, RunState
from duetime_core.schedule.model import Cron, GapPolicy

JOB = uuid.UUID("00000000-0000-0000-0000-000000000001")
T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
LOOKAHEAD = timedelta(seconds=5)
TARGET = HttpTarget(HttpMethod.POST, "https://x.test/")


def every(
    seconds: int, policy: MisfirePolicy = MisfirePolicy.RUN_ONCE, **misfire: object
) -> JobSpec:
    return JobSpec(
        display_name="",
        schedule=Every(timedelta(seconds=seconds), None, T0),
        target=TARGET,
        misfire=MisfireSettings(policy=policy, **misfire),  # type: ignore[arg-type]
    )


def at(t: datetime) -> Occurrence:
    return Occurrence(t, t)


def states(plan: ClaimPlan) -> list[tuple[RunState, datetime, int]]:
    return [(r.state, r.nominal_time, r.occurrence_count) for r in plan.runs]


def test_an_on_time_claim_queues_the_occurrence_and_advances() -> None:
    plan = plan_claim(
        JOB, every(60), at(T0 + timedelta(minutes=1)), T0 + timedelta(seconds=58), LOOKAHEAD
    )
    assert states(plan) == [(RunState.QUEUED, T0 + timedelta(minutes=1), 1)]
    assert plan.next == at(T0 + timedelta(minutes=2))
    assert plan.state is JobState.ACTIVE


def test_a_job_faster_than_the_lookahead_queues_everything_due() -> None:
    plan = plan_claim(JOB, every(1), at(T0 + timedelta(seconds=1)), T0, LOOKAHEAD)
    assert [r.nominal_time for r in plan.runs] == [T0 + timedelta(seconds=s) for s in range(1, 6)]
    assert plan.next == at(T0 + timedelta(seconds=6))


def test_run_once_after_an_outage_misses_all_but_the_on_time_one() -> None:
    now = T0 + timedelta(hours=1, seconds=30)
    plan = plan_claim(JOB, every(60), at(T0 + timedelta(minutes=1)), now, LOOKAHEAD)
    missed, queued = plan.runs
    assert (missed.state, missed.reason, missed.occurrence_count) == (
        RunState.MISSED,
        RunReason.MISFIRE,
        59,
    )
    assert missed.nominal_time == T0 + timedelta(minutes=1)
    assert missed.range_end_time == T0 + timedelta(minutes=59)
    assert (queued.state, queued.nominal_time) == (RunState.QUEUED, T0 + timedelta(hours=1))
    assert plan.next == at(T0 + timedelta(hours=1, minutes=1))


def test_run_once_runs_the_latest_misfired_when_none_is_on_time() -> None:
    now = T0 + timedelta(minutes=30, seconds=50)  # the :30 occurrence is 50 s late, beyond 30 s
    spec = every(600, MisfirePolicy.RUN_ONCE, threshold=timedelta(seconds=30))
    plan = plan_claim(JOB, spec, at(T0 + timedelta(minutes=10)), now, LOOKAHEAD)
    assert states(plan) == [
        (RunState.MISSED, T0 + timedelta(minutes=10), 2),
        (RunState.QUEUED, T0 + timedelta(minutes=30), 1),
    ]


def test_skip_misses_every_misfired_occurrence() -> None:
    now = T0 + timedelta(minutes=30, seconds=50)
    spec = every(600, MisfirePolicy.SKIP, threshold=timedelta(seconds=30))
    plan = plan_claim(JOB, spec, at(T0 + timedelta(minutes=10)), now, LOOKAHEAD)
    assert states(plan) == [(RunState.MISSED, T0 + timedelta(minutes=10), 3)]
    assert plan.next == at(T0 + timedelta(minutes=40))


def test_run_all_catches_up_within_count_and_age() -> None:
    now = T0 + timedelta(hours=10, seconds=30)
    spec = every(
        3600, MisfirePolicy.RUN_ALL, max_catch_up_runs=3, max_catch_up_age=timedelta(hours=5)
    )
    plan = plan_claim(JOB, spec, at(T0 + timedelta(hours=1)), now, LOOKAHEAD)
    missed = plan.runs[0]
    assert (missed.state, missed.occurrence_count) == (RunState.MISSED, 6)  # hours 1..6
    caught_up = [r for r in plan.runs if r.catch_up]
    assert [r.nominal_time for r in caught_up] == [T0 + timedelta(hours=h) for h in (7, 8, 9)]
    on_time = [r for r in plan.runs if r.state is RunState.QUEUED and not r.catch_up]
    assert [r.nominal_time for r in on_time] == [T0 + timedelta(hours=10)]


def test_a_backlog_longer_than_one_claim_is_worked_off_in_parts() -> None:
    spec = every(1, MisfirePolicy.RUN_ONCE)
    now = T0 + timedelta(seconds=MAX_EXAMINED * 2 + 30)
    pending = at(T0 + timedelta(seconds=1))
    total_missed = 0
    queued: list[datetime] = []
    for _ in range(5):
        plan = plan_claim(JOB, spec, pending, now, LOOKAHEAD)
        total_missed += sum(r.occurrence_count for r in plan.runs if r.state is RunState.MISSED)
        queued += [r.nominal_time for r in plan.runs if r.state is RunState.QUEUED]
        assert plan.next is not None
        pending = plan.next
        if pending.effective_time > now:
            break
    # Every second up to now - threshold is missed exactly once; the on-time ones run.
    last_missed = now - timedelta(seconds=60)
    assert total_missed == int((last_missed - T0).total_seconds()) - 1
    assert queued[0] == last_missed
    assert queued[-1] == now + LOOKAHEAD
    assert len(queued) == len(set(queued))


def test_a_late_one_off_still_runs_once_and_completes() -> None:
    when = T0 - timedelta(days=2)
    spec = JobSpec(display_name="", schedule=AtInstant(when), target=TARGET)
    plan = plan_claim(JOB, spec, at(when), T0, LOOKAHEAD)
    assert states(plan) == [(RunState.QUEUED, when, 1)]
    assert plan.state is JobState.COMPLETED
    assert plan.next is None


def test_dst_gap_under_skip_is_recorded() -> None:
    spec = JobSpec(
        display_name="",
        schedule=Cron("30 2 * * *", "America/New_York", gap=GapPolicy.SKIP),
        target=TARGET,
    )
    mar7 = datetime(2026, 3, 7, 7, 30, tzinfo=UTC)  # 02:30 EST
    plan = plan_claim(JOB, spec, at(mar7), mar7, LOOKAHEAD)
    queued, skipped = plan.runs
    assert (queued.state, queued.nominal_time) == (RunState.QUEUED, mar7)
    assert (skipped.state, skipped.reason) == (RunState.SKIPPED, RunReason.DST_GAP)
    assert skipped.nominal_time == datetime(2026, 3, 8, 7, 0, tzinfo=UTC)  # the gap's end
    assert plan.next == at(datetime(2026, 3, 9, 6, 30, tzinfo=UTC))  # 02:30 EDT


def test_gap_skip_records_only_the_occurrences_a_gap_dropped() -> None:
    """A backlog of kept occurrences of a SKIP job is not mistaken for DST gaps."""
    spec = JobSpec(
        display_name="",
        schedule=Cron("30 2 * * *", "America/New_York", gap=GapPolicy.SKIP),
        target=TARGET,
    )
    june1 = datetime(2026, 6, 1, 6, 30, tzinfo=UTC)  # 02:30 EDT
    plan = plan_claim(JOB, spec, at(june1), june1 + timedelta(days=3, minutes=1), LOOKAHEAD)
    assert not [r for r in plan.runs if r.reason is RunReason.DST_GAP]
    assert sum(r.occurrence_count for r in plan.runs) == 4
    # Across the spring-forward night, in a backlog, exactly the one dropped time is recorded.
    mar6 = datetime(2026, 3, 6, 7, 30, tzinfo=UTC)
    plan = plan_claim(JOB, spec, at(mar6), mar6 + timedelta(days=4, minutes=1), LOOKAHEAD)
    gaps = [r for r in plan.runs if r.reason is RunReason.DST_GAP]
    assert [(g.nominal_time, g.occurrence_count) for g in gaps] == [
        (datetime(2026, 3, 8, 7, 0, tzinfo=UTC), 1)
    ]


def test_a_missed_range_is_cut_where_a_dst_gap_dropped_an_occurrence() -> None:
    # Daily at 02:30 New York, late from 6 to 10 March 2026: 8 March's 02:30 does not exist.
    spec = JobSpec(
        display_name="",
        schedule=Cron("30 2 * * *", "America/New_York", gap=GapPolicy.SKIP),
        target=TARGET,
        misfire=MisfireSettings(policy=MisfirePolicy.SKIP),
    )
    mar6 = datetime(2026, 3, 6, 7, 30, tzinfo=UTC)
    plan = plan_claim(JOB, spec, at(mar6), mar6 + timedelta(days=4, hours=5), LOOKAHEAD)
    records = [
        (r.state, r.reason, r.nominal_time.day, r.range_end_time and r.range_end_time.day)
        for r in sorted(plan.runs, key=lambda r: r.nominal_time)
    ]
    # Each record stands for exactly the occurrences in its range: none spans the gap's.
    assert records == [
        (RunState.MISSED, RunReason.MISFIRE, 6, 7),
        (RunState.SKIPPED, RunReason.DST_GAP, 8, None),
        (RunState.MISSED, RunReason.MISFIRE, 9, 10),
    ]
