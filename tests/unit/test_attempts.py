"""The attempt rules: when a run may start, and what an attempt's end makes of its run."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from duetime_core.attempts import (
    ALREADY_STARTED,
    JOB_DELETED,
    MAX_HAND_BACKS,
    RUN_CANCELLED,
    RUN_FINISHED,
    RUN_MISSED,
    RUN_RETRY_WAIT,
    RUN_SKIPPED,
    RUN_WAITING,
    SUPERSEDED,
    AttemptSettings,
    CallProgress,
    EndFacts,
    JobView,
    OtherRun,
    OverlapView,
    StartDecision,
    StartKind,
    StartView,
    budget_position,
    check_admission,
    decide_completion,
    decide_expiry,
    decide_start,
    expiry_outcome,
    outcome_known,
    truncate_error,
)
from duetime_core.backoff import backoff_bounds
from duetime_core.jobspec import (
    Delivery,
    JobState,
    MisfirePolicy,
    MisfireSettings,
    OverlapPolicy,
    RetryPolicy,
)
from duetime_core.records import AttemptOutcome, RunReason, RunState

T0 = datetime(2026, 10, 26, 20, 30, tzinfo=UTC)
S = timedelta(seconds=1)
SETTINGS = AttemptSettings()
ACTIVE = JobView(JobState.ACTIVE)

RUN = StartView(
    state=RunState.QUEUED,
    scheduled=True,
    nominal_time=T0,
    effective_time=T0 + 5 * S,
    next_attempt_time=None,
    attempt=0,
    start_delivery_id=None,
    open_attempt_worker=None,
    misfire=MisfireSettings(),
    overlap=OverlapPolicy.ALLOW,
)
DUE = T0 + 6 * S


def decide(
    run: StartView = RUN,
    job: JobView = ACTIVE,
    overlap: OverlapView | None = None,
    now: datetime = DUE,
) -> StartDecision:
    return decide_start(
        run, job, overlap or OverlapView(), now, SETTINGS, delivery_id="d-1", worker_id="w-1"
    )


def other(
    state: RunState,
    *,
    attempt: int = 1,
    nominal: datetime = T0 - timedelta(minutes=1),
    open_attempt: bool | None = None,
) -> OtherRun:
    return OtherRun(
        run_id=uuid.uuid4(),
        nominal_time=nominal,
        state=state,
        attempt=attempt,
        open_attempt=state is RunState.RUNNING if open_attempt is None else open_attempt,
        cancel_reason="",
    )


# --- admission ----------------------------------------------------------------------------------


def test_a_queued_run_is_too_early_until_its_effective_time() -> None:
    early = check_admission(RUN, T0 + 4 * S, "d-1", "w-1")
    assert early is not None
    assert (early.kind, early.until) == (StartKind.TOO_EARLY, RUN.effective_time)
    assert check_admission(RUN, RUN.effective_time, "d-1", "w-1") is None


def test_a_requeued_retry_is_too_early_until_its_next_attempt_time() -> None:
    retry = replace(RUN, attempt=1, next_attempt_time=T0 + 60 * S)
    early = check_admission(retry, T0 + 30 * S, "d-2", "w-1")
    assert early is not None
    assert (early.kind, early.until) == (StartKind.TOO_EARLY, T0 + 60 * S)
    # A next attempt time before the effective time does not make the run earlier.
    assert replace(RUN, next_attempt_time=T0).not_before == RUN.effective_time


def test_the_same_delivery_and_worker_get_their_attempt_back() -> None:
    running = replace(RUN, state=RunState.RUNNING, attempt=1, start_delivery_id="d-1")
    running = replace(running, open_attempt_worker="w-1")
    replay = check_admission(running, DUE, "d-1", "w-1")
    assert replay is not None
    assert replay.kind is StartKind.REPLAY
    for delivery, worker in [("d-2", "w-1"), ("d-1", "w-2")]:
        refused = check_admission(running, DUE, delivery, worker)
        assert refused is not None
        assert (refused.kind, refused.refusal, refused.new_state) == (
            StartKind.REFUSE,
            ALREADY_STARTED,
            None,
        )


@pytest.mark.parametrize(
    ("state", "reason"),
    [
        (RunState.WAITING, RUN_WAITING),
        (RunState.RETRY_WAIT, RUN_RETRY_WAIT),
        (RunState.SKIPPED, RUN_SKIPPED),
        (RunState.CANCELLED, RUN_CANCELLED),
        (RunState.MISSED, RUN_MISSED),
        (RunState.SUCCEEDED, RUN_FINISHED),
        (RunState.DEAD_LETTERED, RUN_FINISHED),
    ],
)
def test_other_states_are_refused_without_change(state: RunState, reason: str) -> None:
    decision = check_admission(replace(RUN, state=state), DUE, "d-1", "w-1")
    assert decision is not None
    assert (decision.kind, decision.refusal, decision.new_state) == (
        StartKind.REFUSE,
        reason,
        None,
    )


# --- the job ------------------------------------------------------------------------------------


@pytest.mark.parametrize("job", [JobView(JobState.DELETED), JobView(None)])
def test_a_deleted_job_cancels_the_run(job: JobView) -> None:
    d = decide(job=job)
    assert (d.kind, d.new_state, d.run_reason, d.refusal) == (
        StartKind.REFUSE,
        RunState.CANCELLED,
        RunReason.JOB_DELETED,
        RUN_CANCELLED,
    )


def test_a_paused_job_skips_scheduled_runs_but_runs_triggered_ones() -> None:
    paused = JobView(JobState.PAUSED)
    d = decide(job=paused)
    assert (d.kind, d.new_state, d.run_reason) == (
        StartKind.REFUSE,
        RunState.SKIPPED,
        RunReason.JOB_PAUSED,
    )
    assert decide(replace(RUN, scheduled=False), job=paused).kind is StartKind.START


@pytest.mark.parametrize("state", [JobState.COMPLETED, JobState.ERROR, JobState.ACTIVE])
def test_other_job_states_let_the_run_start(state: JobState) -> None:
    assert decide(job=JobView(state)).kind is StartKind.START


def test_too_early_wins_before_the_job_is_consulted() -> None:
    d = decide(job=JobView(JobState.DELETED), now=T0)
    assert d.kind is StartKind.TOO_EARLY


# --- misfire ------------------------------------------------------------------------------------

LATE = RUN.effective_time + 61 * S


@pytest.mark.parametrize(
    ("policy", "newer", "missed"),
    [
        (MisfirePolicy.RUN_ONCE, False, False),
        (MisfirePolicy.RUN_ONCE, True, True),
        (MisfirePolicy.SKIP, False, True),
        (MisfirePolicy.SKIP, True, True),
        (MisfirePolicy.RUN_ALL, False, False),
        (MisfirePolicy.RUN_ALL, True, False),
    ],
)
def test_misfire_at_start(policy: MisfirePolicy, newer: bool, missed: bool) -> None:
    run = replace(RUN, misfire=MisfireSettings(policy=policy))
    d = decide(run, overlap=OverlapView(newer_scheduled_run=newer), now=LATE)
    if missed:
        assert (d.kind, d.new_state, d.run_reason, d.refusal) == (
            StartKind.REFUSE,
            RunState.MISSED,
            RunReason.MISFIRE,
            RUN_MISSED,
        )
    else:
        assert d.kind is StartKind.START


def test_misfire_threshold_is_strict_and_per_job() -> None:
    skip = replace(RUN, misfire=MisfireSettings(policy=MisfirePolicy.SKIP, threshold=10 * S))
    assert decide(skip, now=skip.effective_time + 10 * S).kind is StartKind.START
    late = decide(skip, now=skip.effective_time + 10 * S + timedelta(microseconds=1))
    assert late.new_state is RunState.MISSED


def test_misfire_applies_only_to_a_scheduled_runs_first_attempt() -> None:
    skip = replace(RUN, misfire=MisfireSettings(policy=MisfirePolicy.SKIP))
    assert decide(replace(skip, scheduled=False), now=LATE).kind is StartKind.START
    retry = replace(skip, attempt=2, next_attempt_time=RUN.effective_time + S)
    assert decide(retry, now=LATE).kind is StartKind.START


def test_misfire_counts_from_a_release() -> None:
    """A WAITING run released late keeps its turn: not-before is the release time."""
    skip = replace(RUN, misfire=MisfireSettings(policy=MisfirePolicy.SKIP))
    released = replace(skip, next_attempt_time=LATE - S)
    assert decide(released, now=LATE).kind is StartKind.START


# --- overlap ------------------------------------------------------------------------------------


def with_overlap(policy: OverlapPolicy) -> StartView:
    return replace(RUN, overlap=policy)


@pytest.mark.parametrize("policy", list(OverlapPolicy))
def test_nothing_active_starts_under_every_policy(policy: OverlapPolicy) -> None:
    fresh = OverlapView((other(RunState.QUEUED, attempt=0),))
    assert decide(with_overlap(policy), overlap=fresh).kind is StartKind.START


def test_allow_starts_beside_an_active_run() -> None:
    busy = OverlapView((other(RunState.RUNNING),))
    assert decide(with_overlap(OverlapPolicy.ALLOW), overlap=busy).kind is StartKind.START


@pytest.mark.parametrize(
    "holder",
    [
        other(RunState.RUNNING),
        other(RunState.RETRY_WAIT),
        other(RunState.QUEUED, attempt=2),  # a requeued retry still holds the job
    ],
)
def test_skip_while_another_run_holds_the_job(holder: OtherRun) -> None:
    d = decide(with_overlap(OverlapPolicy.SKIP), overlap=OverlapView((holder,)))
    assert (d.kind, d.new_state, d.run_reason, d.refusal) == (
        StartKind.REFUSE,
        RunState.SKIPPED,
        RunReason.OVERLAP,
        RUN_SKIPPED,
    )


def test_buffer_one_waits_once_then_skips() -> None:
    run = with_overlap(OverlapPolicy.BUFFER_ONE)
    d = decide(run, overlap=OverlapView((other(RunState.RUNNING),)))
    assert (d.kind, d.new_state, d.refusal) == (
        StartKind.REFUSE,
        RunState.WAITING,
        RUN_WAITING,
    )
    full = OverlapView((other(RunState.RUNNING), other(RunState.WAITING, attempt=0)))
    d = decide(run, overlap=full)
    assert (d.new_state, d.run_reason) == (RunState.SKIPPED, RunReason.OVERLAP)


def test_cancel_previous_supersedes_open_attempts_and_waits() -> None:
    running, idle = other(RunState.RUNNING), other(RunState.RETRY_WAIT)
    d = decide(with_overlap(OverlapPolicy.CANCEL_PREVIOUS), overlap=OverlapView((running, idle)))
    assert d.kind is StartKind.SUPERSEDE
    assert d.cancel_attempts == (running,)
    assert d.cancel_runs == (idle,)
    assert d.until == DUE + SETTINGS.supersede_retry_after
    assert not d.start_after_cancel


def test_cancel_previous_with_only_idle_runs_starts_at_once() -> None:
    d = decide(
        with_overlap(OverlapPolicy.CANCEL_PREVIOUS),
        overlap=OverlapView((other(RunState.RETRY_WAIT),)),
    )
    assert d.kind is StartKind.SUPERSEDE
    assert d.start_after_cancel


def test_cancel_previous_never_cancels_a_newer_run() -> None:
    newer = other(RunState.RUNNING, nominal=T0 + timedelta(minutes=1))
    d = decide(with_overlap(OverlapPolicy.CANCEL_PREVIOUS), overlap=OverlapView((newer,)))
    assert (d.kind, d.new_state, d.run_reason) == (
        StartKind.REFUSE,
        RunState.SKIPPED,
        RunReason.OVERLAP,
    )


def test_the_job_is_checked_before_misfire_and_overlap() -> None:
    run = replace(
        RUN,
        overlap=OverlapPolicy.SKIP,
        misfire=MisfireSettings(policy=MisfirePolicy.SKIP),
    )
    busy = OverlapView((other(RunState.RUNNING),))
    assert decide(run, job=JobView(JobState.PAUSED), overlap=busy, now=LATE).run_reason is (
        RunReason.JOB_PAUSED
    )
    assert decide(run, overlap=busy, now=LATE).run_reason is RunReason.MISFIRE


# --- completion ---------------------------------------------------------------------------------

RETRY = RetryPolicy(max_attempts=3, initial_backoff=10 * S, max_backoff=60 * S, multiplier=2.0)
FACTS = EndFacts(attempt=1, attempt_limit=3, retry=RETRY, cancel_reason="", job_deleted=False)
NOW = T0 + timedelta(hours=1)


def test_success() -> None:
    out = decide_completion(AttemptOutcome.SUCCEEDED, False, "", FACTS, NOW, 0.5)
    assert (out.state, out.reason, out.next_attempt_time, out.final) == (
        RunState.SUCCEEDED,
        RunReason.NONE,
        None,
        True,
    )
    # Success wins even over a cancel request: the work was done.
    cancelled = replace(FACTS, cancel_reason="SUPERSEDED", job_deleted=True)
    assert decide_completion(AttemptOutcome.SUCCEEDED, True, "", cancelled, NOW, 0.5).state is (
        RunState.SUCCEEDED
    )


@pytest.mark.parametrize("outcome", [AttemptOutcome.FAILED, AttemptOutcome.TIMED_OUT])
def test_a_retryable_failure_waits_with_backoff(outcome: AttemptOutcome) -> None:
    for attempt in (1, 2):
        facts = replace(FACTS, attempt=attempt)
        out = decide_completion(outcome, True, "HTTP 503", facts, NOW, 0.3)
        assert (out.state, out.reason_detail, out.final) == (RunState.RETRY_WAIT, "HTTP 503", False)
        assert out.next_attempt_time is not None
        low, high = backoff_bounds(RETRY, attempt)
        assert low <= out.next_attempt_time - NOW <= high


def test_timed_out_is_retryable_whatever_the_flag() -> None:
    out = decide_completion(AttemptOutcome.TIMED_OUT, False, "", FACTS, NOW, 0.3)
    assert out.state is RunState.RETRY_WAIT


def test_non_retryable_and_exhausted_are_dead_lettered() -> None:
    out = decide_completion(AttemptOutcome.FAILED, False, "HTTP 400", FACTS, NOW, 0.3)
    assert (out.state, out.reason, out.reason_detail, out.final) == (
        RunState.DEAD_LETTERED,
        RunReason.NON_RETRYABLE,
        "HTTP 400",
        True,
    )
    last = replace(FACTS, attempt=3)
    out = decide_completion(AttemptOutcome.FAILED, True, "HTTP 503", last, NOW, 0.3)
    assert (out.state, out.reason) == (RunState.DEAD_LETTERED, RunReason.ATTEMPTS_EXHAUSTED)


@pytest.mark.parametrize("reason", ["SUPERSEDED", "JOB_DELETED"])
@pytest.mark.parametrize(
    "outcome", [AttemptOutcome.CANCELLED, AttemptOutcome.FAILED, AttemptOutcome.LEASE_EXPIRED]
)
def test_a_requested_cancel_cancels_the_run(reason: str, outcome: AttemptOutcome) -> None:
    facts = replace(FACTS, cancel_reason=reason)
    out = decide_completion(outcome, True, "", facts, NOW, 0.3)
    assert (out.state, out.reason, out.final) == (RunState.CANCELLED, RunReason(reason), True)


def test_a_deleted_job_cancels_instead_of_retrying() -> None:
    facts = replace(FACTS, job_deleted=True)
    out = decide_completion(AttemptOutcome.CANCELLED, True, "", facts, NOW, 0.3)
    assert (out.state, out.reason) == (RunState.CANCELLED, RunReason.JOB_DELETED)
    out = decide_completion(AttemptOutcome.FAILED, False, "", facts, NOW, 0.3)
    assert (out.state, out.reason) == (RunState.CANCELLED, RunReason.JOB_DELETED)


def test_an_unsolicited_cancel_is_handed_back_for_a_retry() -> None:
    out = decide_completion(AttemptOutcome.CANCELLED, False, "worker stopping", FACTS, NOW, 0.3)
    assert out.state is RunState.RETRY_WAIT


def test_a_hand_back_requeues_at_once_outside_the_budget() -> None:
    # Even the last attempt of the budget: handing it back does not dead-letter the run.
    for attempt in (1, 3):
        facts = replace(FACTS, attempt=attempt)
        out = decide_completion(AttemptOutcome.HANDED_BACK, False, "shutting down", facts, NOW, 0)
        assert (out.state, out.requeue, out.next_attempt_time, out.final) == (
            RunState.QUEUED,
            True,
            NOW,
            False,
        )
        assert out.reason_detail == "shutting down"
    # Other outcomes never requeue outside the budget.
    for outcome in AttemptOutcome:
        if outcome is not AttemptOutcome.HANDED_BACK:
            assert not decide_completion(outcome, True, "", FACTS, NOW, 0.3).requeue


def test_past_the_cap_a_hand_back_is_a_failure_that_spends_the_budget() -> None:
    assert MAX_HAND_BACKS == 3
    # The third hand-back of the run is still free (two before it).
    free = replace(FACTS, attempt=3, attempt_limit=5, hand_backs=MAX_HAND_BACKS - 1)
    out = decide_completion(AttemptOutcome.HANDED_BACK, True, "shutting down", free, NOW, 0)
    assert (out.state, out.requeue) == (RunState.QUEUED, True)
    # The fourth is retried like a failure, with backoff, and its error says why.
    later = replace(FACTS, attempt=4, attempt_limit=6, hand_backs=MAX_HAND_BACKS)
    out = decide_completion(AttemptOutcome.HANDED_BACK, False, "shutting down", later, NOW, 0.0)
    assert (out.state, out.requeue, out.next_attempt_time) == (
        RunState.RETRY_WAIT,
        False,
        NOW + 5 * S,  # the budget's first backoff (equal jitter, rand 0)
    )
    assert out.reason_detail == (
        "handed back 4 times (more than 3 are counted as failures): shutting down"
    )
    # When it is the budget's last attempt, the run is dead-lettered: exhausted, saying why.
    last = replace(later, attempt=6, hand_backs=5)
    out = decide_completion(AttemptOutcome.HANDED_BACK, True, "shutting down", last, NOW, 0.3)
    assert (out.state, out.reason, out.final, out.requeue) == (
        RunState.DEAD_LETTERED,
        RunReason.ATTEMPTS_EXHAUSTED,
        True,
        False,
    )
    assert out.reason_detail.startswith("handed back 6 times (more than 3")


@pytest.mark.parametrize("reason", ["SUPERSEDED", "JOB_DELETED"])
def test_a_requested_cancel_stays_final_even_when_handed_back(reason: str) -> None:
    facts = replace(FACTS, cancel_reason=reason)
    out = decide_completion(AttemptOutcome.HANDED_BACK, True, "", facts, NOW, 0.3)
    assert (out.state, out.reason, out.final, out.requeue) == (
        RunState.CANCELLED,
        RunReason(reason),
        True,
        False,
    )
    deleted = replace(FACTS, job_deleted=True)
    out = decide_completion(AttemptOutcome.HANDED_BACK, True, "", deleted, NOW, 0.3)
    assert (out.state, out.final) == (RunState.CANCELLED, True)


def test_a_redriven_budget_restarts_the_backoff() -> None:
    # Three attempts spent, then a redrive: the limit is 3 + 3 and attempt 4 is the first.
    redriven = replace(FACTS, attempt=4, attempt_limit=6)
    assert budget_position(redriven) == 1
    out = decide_completion(AttemptOutcome.FAILED, True, "", redriven, NOW, 0.0)
    assert out.next_attempt_time == NOW + backoff_bounds(RETRY, 1)[0]
    assert budget_position(replace(redriven, attempt=6)) == 3
    out = decide_completion(AttemptOutcome.FAILED, True, "", replace(redriven, attempt=6), NOW, 0)
    assert out.reason is RunReason.ATTEMPTS_EXHAUSTED


@given(st.integers(1, 100), st.integers(0, 100), st.booleans(), st.floats(0, 1, exclude_max=True))
def test_a_failure_never_retries_past_the_limit(
    attempt: int, extra: int, retryable: bool, rand: float
) -> None:
    facts = replace(FACTS, attempt=attempt, attempt_limit=attempt + extra)
    out = decide_completion(AttemptOutcome.FAILED, retryable, "", facts, NOW, rand)
    if out.state is RunState.RETRY_WAIT:
        assert retryable
        assert attempt < facts.attempt_limit
        assert out.next_attempt_time is not None
        assert NOW < out.next_attempt_time <= NOW + RETRY.max_backoff
    else:
        assert out.state is RunState.DEAD_LETTERED


# --- expiry and errors --------------------------------------------------------------------------


def test_expiry_outcome_is_whichever_limit_ran_out_first() -> None:
    assert expiry_outcome(T0, T0 + S) is AttemptOutcome.LEASE_EXPIRED
    assert expiry_outcome(T0 + S, T0) is AttemptOutcome.TIMED_OUT
    outcome, error, run = decide_expiry(T0, T0 + S, FACTS, NOW, 0.5)
    assert (outcome, run.state) == (AttemptOutcome.LEASE_EXPIRED, RunState.RETRY_WAIT)
    assert "lease" in error
    outcome, _, run = decide_expiry(T0, T0, replace(FACTS, attempt=3), NOW, 0.5)
    assert (outcome, run.state, run.reason) == (
        AttemptOutcome.TIMED_OUT,
        RunState.DEAD_LETTERED,
        RunReason.ATTEMPTS_EXHAUSTED,
    )


def test_errors_are_cut_to_4_kib_on_a_character_boundary() -> None:
    assert truncate_error("short") == "short"
    cut = truncate_error("é" * 3000)
    assert len(cut.encode()) <= 4096
    assert cut == "é" * 2048
    assert truncate_error("x" * 5000) == "x" * 4096


# --- delivery ---------------------------------------------------------------------------------

AT_MOST_ONCE = replace(FACTS, delivery=Delivery.AT_MOST_ONCE)
UNKNOWN_CALLS = [CallProgress.BEGUN, None]
KNOWN_CALLS = [CallProgress.NOT_BEGUN, CallProgress.ANSWERED]
FAILURES = [
    AttemptOutcome.FAILED,
    AttemptOutcome.TIMED_OUT,
    AttemptOutcome.LEASE_EXPIRED,
    AttemptOutcome.CANCELLED,
]


@pytest.mark.parametrize("call", UNKNOWN_CALLS)
@pytest.mark.parametrize("outcome", [*FAILURES, AttemptOutcome.HANDED_BACK])
def test_at_most_once_never_retries_an_unknown_outcome(
    outcome: AttemptOutcome, call: CallProgress | None
) -> None:
    run = decide_completion(outcome, True, "boom", replace(AT_MOST_ONCE, call=call), NOW, 0.5)
    assert (run.state, run.reason, run.requeue) == (
        RunState.DEAD_LETTERED,
        RunReason.OUTCOME_UNKNOWN,
        False,
    )
    assert "may have been called" in run.reason_detail
    assert run.reason_detail.endswith("boom")


@pytest.mark.parametrize("call", KNOWN_CALLS)
@pytest.mark.parametrize("outcome", FAILURES)
def test_at_most_once_retries_a_known_failure(outcome: AttemptOutcome, call: CallProgress) -> None:
    run = decide_completion(outcome, True, "boom", replace(AT_MOST_ONCE, call=call), NOW, 0.5)
    assert run.state is RunState.RETRY_WAIT


def test_at_most_once_keeps_the_other_rules_of_a_known_outcome() -> None:
    not_begun = replace(AT_MOST_ONCE, call=CallProgress.NOT_BEGUN)
    handed = decide_completion(AttemptOutcome.HANDED_BACK, True, "", not_begun, NOW, 0.5)
    assert (handed.state, handed.requeue) == (RunState.QUEUED, True)
    answered = replace(AT_MOST_ONCE, call=CallProgress.ANSWERED)
    refused = decide_completion(AttemptOutcome.FAILED, False, "HTTP 400", answered, NOW, 0.5)
    assert refused.reason is RunReason.NON_RETRYABLE
    last = replace(answered, attempt=3)
    spent = decide_completion(AttemptOutcome.FAILED, True, "HTTP 500", last, NOW, 0.5)
    assert spent.reason is RunReason.ATTEMPTS_EXHAUSTED
    assert decide_completion(AttemptOutcome.SUCCEEDED, False, "", AT_MOST_ONCE, NOW, 0.5).state is (
        RunState.SUCCEEDED
    )


@pytest.mark.parametrize("reason", [SUPERSEDED, JOB_DELETED])
def test_at_most_once_a_requested_cancel_still_cancels(reason: str) -> None:
    facts = replace(AT_MOST_ONCE, cancel_reason=reason, call=CallProgress.BEGUN)
    run = decide_completion(AttemptOutcome.CANCELLED, True, "", facts, NOW, 0.5)
    assert run.state is RunState.CANCELLED


@pytest.mark.parametrize("call", [*UNKNOWN_CALLS, *KNOWN_CALLS])
def test_at_least_once_ignores_how_far_the_call_got(call: CallProgress | None) -> None:
    facts = replace(FACTS, call=call)
    assert decide_completion(AttemptOutcome.FAILED, True, "", facts, NOW, 0.5).state is (
        RunState.RETRY_WAIT
    )
    _, _, run = decide_expiry(T0, T0 + S, facts, NOW, 0.5)
    assert run.state is RunState.RETRY_WAIT


def test_an_expired_at_most_once_attempt_is_retried_only_when_its_worker_said_not_begun() -> None:
    for call, state in [
        (CallProgress.NOT_BEGUN, RunState.RETRY_WAIT),
        (CallProgress.BEGUN, RunState.DEAD_LETTERED),
        (None, RunState.DEAD_LETTERED),
    ]:
        for lease, deadline in [(T0, T0 + S), (T0 + S, T0)]:  # lease expired, timed out
            _, _, run = decide_expiry(lease, deadline, replace(AT_MOST_ONCE, call=call), NOW, 0.5)
            assert run.state is state, (call, lease, deadline)
    assert outcome_known(CallProgress.ANSWERED)
    assert not outcome_known(None)
