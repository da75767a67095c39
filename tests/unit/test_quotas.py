"""Team quotas: the rate limit (GCRA), runs in flight, job refusals, and dispatch decisions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from duetime_core.errors import PermissionDenied, ResourceExhausted
from duetime_core.fairness import PriorityFairQueue
from duetime_core.jobspec import Priority
from duetime_core.quotas import (
    FAIR_SHARE,
    Admission,
    Candidate,
    QuotaLimit,
    TeamQuota,
    TeamState,
    admit,
    check_job_quota,
    plan_dispatch,
)
from duetime_core.records import RunReason

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
S = timedelta(seconds=1)


def team(name: str = "a", **limits: object) -> TeamState:
    return TeamState(name, TeamQuota(**limits))  # type: ignore[arg-type]


def test_the_rate_limit_lets_a_burst_through_then_one_per_interval() -> None:
    t = team(runs_per_minute=60, rate_burst=3, max_running=0)
    assert t.rate_available(T0) == 3
    assert [admit(t, T0) for _ in range(4)] == [QuotaLimit.NONE] * 3 + [QuotaLimit.RATE]
    assert t.rate_available(T0) == 0
    assert t.rate_eligible_time(T0) == T0 + S
    assert admit(t, T0 + S * 0.999) is QuotaLimit.RATE
    assert admit(t, T0 + S) is QuotaLimit.NONE
    assert admit(t, T0 + S) is QuotaLimit.RATE
    # Over a long stretch, one a second, whatever the burst did first.
    admitted = sum(admit(t, T0 + S * (2 + i / 10)) is QuotaLimit.NONE for i in range(600))
    assert admitted == 60
    assert t.dirty


def test_a_rate_limit_recovers_its_burst_while_idle_but_not_more() -> None:
    t = team(runs_per_minute=600, rate_burst=5, max_running=0)
    for _ in range(5):
        admit(t, T0)
    assert t.rate_available(T0 + timedelta(hours=1)) == 5


def test_runs_in_flight_are_held_at_the_limit_and_spend_no_rate() -> None:
    t = team(runs_per_minute=60, rate_burst=10, max_running=2)
    assert [admit(t, T0) for _ in range(3)] == [
        QuotaLimit.NONE,
        QuotaLimit.NONE,
        QuotaLimit.CONCURRENCY,
    ]
    assert t.in_flight == 2
    assert t.rate_available(T0) == 8


def test_zero_means_no_limit() -> None:
    t = team(runs_per_minute=0, max_running=0)
    assert all(admit(t, T0) is QuotaLimit.NONE for _ in range(10_000))
    assert t.rate_available(T0) == t.quota.rate_burst


def test_job_writes_past_the_stored_jobs_quota_or_above_the_priority_grant_are_refused() -> None:
    t = team(max_stored_jobs=2, max_priority=Priority.NORMAL)
    t.stored_jobs = 2
    with pytest.raises(ResourceExhausted) as exhausted:
        check_job_quota(t, priority=Priority.NORMAL, adding=1)
    assert exhausted.value.reason == "STORED_JOBS_QUOTA"
    (violation,) = exhausted.value.quota_violations
    assert (violation.quota, violation.limit, violation.usage) == ("max_stored_jobs", "2", "2")
    with pytest.raises(PermissionDenied) as denied:
        check_job_quota(t, priority=Priority.HIGH, adding=None)
    assert denied.value.quota_violations[0].quota == "max_priority"
    check_job_quota(t, priority=Priority.LOW, adding=0)  # at the limit, not past it
    check_job_quota(t, priority=None, adding=None)
    t.stored_jobs = 3  # the quota was lowered below what the team has
    with pytest.raises(ResourceExhausted):
        check_job_quota(t, priority=None, adding=0)


def candidates(team_id: str, n: int, priority: Priority = Priority.NORMAL) -> list[Candidate[str]]:
    return [Candidate(f"{team_id}{i}", team_id, priority) for i in range(n)]


def test_plan_dispatch_applies_quotas_in_due_order_and_holds_the_rest_of_a_blocked_team() -> None:
    teams = {"a": team("a", runs_per_minute=60, rate_burst=2, max_running=0)}
    decided = plan_dispatch(candidates("a", 4), teams, T0, None, PriorityFairQueue())
    rate = Admission(RunReason.QUOTA, QuotaLimit.RATE)
    assert [decided[f"a{i}"] for i in range(4)] == [Admission(), Admission(), rate, rate]


def test_a_run_dispatched_ahead_of_its_time_spends_the_rate_at_that_time() -> None:
    # The claim's look-ahead dispatches runs due later: their rate counts from their time, so
    # dispatching them early cannot start more than the rate allows once they are due.
    teams = {"a": team("a", runs_per_minute=60, rate_burst=1, max_running=0)}
    due = T0 + 5 * S
    first = plan_dispatch(
        [Candidate("a0", "a", Priority.NORMAL, due)], teams, T0, None, PriorityFairQueue()
    )
    assert first["a0"].dispatched
    later = plan_dispatch(
        [Candidate("a1", "a", Priority.NORMAL, due)], teams, T0 + 2 * S, None, PriorityFairQueue()
    )
    assert later["a1"] == Admission(RunReason.QUOTA, QuotaLimit.RATE)
    # Once due, one a second from the first's time on; before it, runs arriving now may still
    # use the time up to it (the gap is tested below), but not within one interval of it.
    assert teams["a"].rate_eligible_time(due - S / 2) == due + S
    assert teams["a"].rate_eligible_time(T0 + 2 * S) == T0 + 2 * S
    # A run already past its time spends the rate now.
    past = plan_dispatch(
        [Candidate("a2", "a", Priority.NORMAL, T0)], teams, due + S, None, PriorityFairQueue()
    )
    assert past["a2"].dispatched


def test_a_claim_ahead_never_lets_more_than_the_burst_through_at_once() -> None:
    # The burst spent now, then a run claimed 8 s ahead: a dispatch now is judged as if the
    # claimed run had gone (never counted from its later time, which would let the claim's
    # lead through again at once), and "free now" says so.
    t = team(runs_per_minute=60, rate_burst=10, max_running=0)
    assert [admit(t, T0) for _ in range(10)] == [QuotaLimit.NONE] * 10
    assert admit(t, T0 + 8 * S) is QuotaLimit.NONE
    assert t.rate_available(T0) == 0
    assert admit(t, T0) is QuotaLimit.RATE
    # An idle team's claim ahead holds back its lead's worth of the burst until its time.
    idle = team(runs_per_minute=60, rate_burst=10, max_running=0)
    assert admit(idle, T0 + 8 * S) is QuotaLimit.NONE
    assert [idle.rate_available(T0 + n * S) for n in (0, 4, 8)] == [1, 5, 9]


def test_short_credit_goes_to_teams_in_fair_order_and_the_rest_waits_its_turn() -> None:
    teams = {"big": team("big"), "small": team("small", weight=1)}
    fair: PriorityFairQueue[str, Candidate[str]] = PriorityFairQueue()
    wanted = candidates("big", 100) + candidates("small", 2)
    decided = plan_dispatch(wanted, teams, T0, 4, fair)
    dispatched = sorted(k for k, d in decided.items() if d.dispatched)
    assert dispatched == ["big0", "big1", "small0", "small1"]
    assert decided["big2"] == FAIR_SHARE
    assert teams["big"].in_flight == 2
    # The next decision carries the turns over: the big team's backlog is first now.
    decided = plan_dispatch(candidates("big", 3), teams, T0, 1, fair)
    assert decided["big0"].dispatched


def test_a_heavier_team_gets_more_of_short_credit() -> None:
    teams = {"a": team("a", weight=3), "b": team("b", weight=1)}
    wanted = candidates("a", 100) + candidates("b", 100)
    decided = plan_dispatch(wanted, teams, T0, 40, PriorityFairQueue())
    got = {t: sum(1 for k, d in decided.items() if d.dispatched and k.startswith(t)) for t in "ab"}
    assert got == {"a": 30, "b": 10}


def test_credit_bounds_only_runs_due_now_and_a_herd_claimed_ahead_takes_none() -> None:
    teams = {"big": team("big", runs_per_minute=0, max_running=0), "small": team("small")}
    herd = [Candidate(f"herd{i}", "big", Priority.NORMAL, T0 + 30 * S) for i in range(100)]
    due = candidates("big", 10) + candidates("small", 2)
    decided = plan_dispatch(due + herd, teams, T0, 4, PriorityFairQueue())
    assert all(decided[c.key].dispatched for c in herd)
    dispatched = sorted(c.key for c in due if decided[c.key].dispatched)
    assert dispatched == ["big0", "big1", "small0", "small1"]
    assert decided["big2"] == FAIR_SHARE


def test_credit_by_a_later_instant_bounds_the_runs_due_by_then() -> None:
    teams = {"big": team("big", runs_per_minute=0, max_running=0)}
    soon = [Candidate(f"soon{i}", "big", Priority.NORMAL, T0 + 5 * S) for i in range(6)]
    herd = [Candidate(f"herd{i}", "big", Priority.NORMAL, T0 + 30 * S) for i in range(50)]
    decided = plan_dispatch(soon + herd, teams, T0, 4, PriorityFairQueue(), T0 + 10 * S)
    assert [decided[c.key].dispatched for c in soon] == [True] * 4 + [False] * 2
    assert decided["soon5"] == FAIR_SHARE
    assert all(decided[c.key].dispatched for c in herd)
