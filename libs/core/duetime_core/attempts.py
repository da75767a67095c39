"""The rules of an attempt's life: may a run start now, and what does an attempt's end mean
for its run.

Pure: the store loads the facts under the row locks (the run's, then the job's), asks these
functions, and writes the answer in the same transaction. Nothing here reads a clock; ``now``
is always the database clock, passed in.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from duetime_core.backoff import backoff_delay
from duetime_core.jobspec import (
    Delivery,
    JobState,
    MisfirePolicy,
    MisfireSettings,
    OverlapPolicy,
    RetryPolicy,
)
from duetime_core.records import AttemptOutcome, RunReason, RunState
from duetime_core.runkey import BACKFILL_PREFIX

MAX_ERROR_BYTES = 4096
# Attempts one Heartbeat message may list: the scheduler refuses more (INVALID_ARGUMENT), and a
# worker holding more sends its full beat in parts of this size.
MAX_ATTEMPTS_PER_BEAT = 10_000

# Hand-backs of one run that are free (queued again outside the retry budget). A deploy or a
# drained worker hands a run back now and then; a run handed back more often than this is one
# whose worker is evicted every time it runs it (a target that gets its worker killed), or a
# job longer than the fleet's deploy interval: left free, it would loop forever without ever
# dead-lettering or alerting. Past the cap a hand-back is an ordinary retryable failure.
MAX_HAND_BACKS = 3

FINAL_STATES = frozenset(
    {
        RunState.SUCCEEDED,
        RunState.DEAD_LETTERED,
        RunState.MISSED,
        RunState.SKIPPED,
        RunState.CANCELLED,
    }
)

# Why a start is refused: what the worker is told (it drops the message).
RUN_NOT_FOUND = "RUN_NOT_FOUND"
ALREADY_STARTED = "ALREADY_STARTED"
RUN_WAITING = "RUN_WAITING"
RUN_RETRY_WAIT = "RUN_RETRY_WAIT"
RUN_SKIPPED = "RUN_SKIPPED"
RUN_CANCELLED = "RUN_CANCELLED"
RUN_MISSED = "RUN_MISSED"
RUN_FINISHED = "RUN_FINISHED"

_REFUSAL_BY_STATE = {
    RunState.WAITING: RUN_WAITING,
    RunState.RETRY_WAIT: RUN_RETRY_WAIT,
    RunState.SKIPPED: RUN_SKIPPED,
    RunState.CANCELLED: RUN_CANCELLED,
    RunState.MISSED: RUN_MISSED,
    RunState.SUCCEEDED: RUN_FINISHED,
    RunState.DEAD_LETTERED: RUN_FINISHED,
}

# Why a worker is told to cancel an attempt (heartbeat directives).
ATTEMPT_CLOSED = "ATTEMPT_CLOSED"
SUPERSEDED = RunReason.SUPERSEDED.value
JOB_DELETED = RunReason.JOB_DELETED.value
# An attempt started ahead of its time whose job was paused before its call began.
JOB_PAUSED = RunReason.JOB_PAUSED.value


@dataclass(frozen=True)
class AttemptSettings:
    """Lease and deadline durations of the attempt service."""

    # An attempt's lease: renewed by each heartbeat, closed as LEASE_EXPIRED when it runs out.
    lease: timedelta = timedelta(seconds=60)
    # Added to the run's attempt timeout: past it, the attempt is TIMED_OUT, heartbeats or not.
    timeout_grace: timedelta = timedelta(seconds=30)
    # CANCEL_PREVIOUS: how soon the new run's worker asks again while the old attempt stops.
    supersede_retry_after: timedelta = timedelta(seconds=1)
    # How long before a run's time its attempt may be started for a worker that asked early
    # (it then calls the target at the run's time): what workers ask (20 s), with room.
    max_early_start: timedelta = timedelta(seconds=30)
    # Such an attempt's lease from its call time (``ahead_lease``), until a beat renews it for a
    # whole lease: a worker gone before its call gives the run back this soon after its time.
    early_lease: timedelta = timedelta(seconds=10)

    @property
    def ahead_lease(self) -> timedelta:
        """The lease an attempt started ahead of its time holds from its call time: the early
        lease, never longer than an attempt's own (a worker cut off at its call loses it as
        one started at its time would)."""
        return min(self.early_lease, self.lease)


# --- starting ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class StartView:
    """The run asked to start, as read under its row lock."""

    state: RunState
    scheduled: bool  # origin SCHEDULE (not a trigger)
    nominal_time: datetime
    effective_time: datetime
    next_attempt_time: datetime | None
    attempt: int
    start_delivery_id: str | None
    open_attempt_worker: str | None  # the worker of the open attempt, for a RUNNING run
    misfire: MisfireSettings  # from the run's snapshot
    overlap: OverlapPolicy  # from the run's snapshot

    @property
    def not_before(self) -> datetime:
        """The effective time, or the next attempt's time when later (a retry, a release)."""
        if self.next_attempt_time is not None and self.next_attempt_time > self.effective_time:
            return self.next_attempt_time
        return self.effective_time


@dataclass(frozen=True)
class JobView:
    """The live job row, read under its lock; ``None`` when the row is gone."""

    state: JobState | None


@dataclass(frozen=True)
class OtherRun:
    """Another run of the same job that is active (RUNNING, RETRY_WAIT, a requeued retry) or
    WAITING."""

    run_id: uuid.UUID
    nominal_time: datetime
    state: RunState
    attempt: int
    open_attempt: bool
    cancel_reason: str  # requested on its open attempt; "" when none

    @property
    def active(self) -> bool:
        """Holds the job for the overlap policy: running, or between its attempts (a retry
        waiting, queued again, or held back by its team's quota). SQL's
        ``duetime_run_holds_job`` is the same rule."""
        return self.state in (RunState.RUNNING, RunState.RETRY_WAIT) or (
            self.state in (RunState.QUEUED, RunState.WAITING) and self.attempt > 0
        )

    @property
    def buffered(self) -> bool:
        """Waits for the job under BUFFER_ONE (the store reads no other first-attempt WAITING
        run as another run of the job)."""
        return self.state is RunState.WAITING and self.attempt == 0


@dataclass(frozen=True)
class OverlapView:
    others: tuple[OtherRun, ...] = ()
    # A scheduled run of the job with a later nominal time exists (QUEUED, WAITING, RUNNING,
    # RETRY_WAIT or SUCCEEDED): for RUN_ONCE, a late run then is not "the latest".
    newer_scheduled_run: bool = False


class StartKind(enum.Enum):
    START = "START"  # a new attempt
    REPLAY = "REPLAY"  # the same delivery again: its attempt, unchanged
    TOO_EARLY = "TOO_EARLY"  # ask again at ``until``
    REFUSE = "REFUSE"  # drop the message; the run may change state
    SUPERSEDE = "SUPERSEDE"  # CANCEL_PREVIOUS: stop the previous runs first


@dataclass(frozen=True)
class StartDecision:
    kind: StartKind
    # TOO_EARLY / SUPERSEDE: when to ask again (on the server's clock).
    until: datetime | None = None
    # REFUSE: the reason the worker sees, and the run's new state (None: unchanged).
    refusal: str = ""
    new_state: RunState | None = None
    run_reason: RunReason = RunReason.NONE
    reason_detail: str = ""
    # SUPERSEDE: open attempts to tell to cancel, idle previous runs to cancel now. When there
    # is no open attempt to wait for, the run starts in the same transaction.
    cancel_attempts: tuple[OtherRun, ...] = field(default_factory=tuple)
    cancel_runs: tuple[OtherRun, ...] = field(default_factory=tuple)
    # START ahead of the run's time: when the worker may call the target (None: now).
    call_time: datetime | None = None

    @property
    def start_after_cancel(self) -> bool:
        return self.kind is StartKind.SUPERSEDE and not self.cancel_attempts

    @property
    def outcome(self) -> RunOutcome | None:
        """REFUSE: the run's new state, written as an ended attempt's is (None: unchanged)."""
        if self.kind is not StartKind.REFUSE or self.new_state is None:
            return None
        return RunOutcome(self.new_state, self.run_reason, self.reason_detail)


def _refuse(
    refusal: str,
    state: RunState | None = None,
    reason: RunReason = RunReason.NONE,
    detail: str = "",
) -> StartDecision:
    return StartDecision(
        StartKind.REFUSE, refusal=refusal, new_state=state, run_reason=reason, reason_detail=detail
    )


def check_admission(
    run: StartView,
    now: datetime,
    delivery_id: str,
    worker_id: str,
    *,
    early: timedelta = timedelta(0),
) -> StartDecision | None:
    """What can be answered from the run alone; None: the job and overlap must decide.
    ``early``: how long before its time the asking worker can hold the run (an attempt started
    ahead is for OVERLAP_POLICY_ALLOW only: the others are decided at the run's time)."""
    if run.state is RunState.RUNNING:
        if run.start_delivery_id == delivery_id and run.open_attempt_worker == worker_id:
            return StartDecision(StartKind.REPLAY)
        return _refuse(ALREADY_STARTED)
    if run.state is not RunState.QUEUED:
        return _refuse(_REFUSAL_BY_STATE[run.state])
    if now < run.not_before and not starts_early(run, now, early):
        return StartDecision(StartKind.TOO_EARLY, until=run.not_before)
    return None


def run_overlap(job_overlap: OverlapPolicy, origin: str) -> OverlapPolicy:
    """The overlap policy a run's start obeys: its job's, but ALLOW for a backfill's runs,
    which their backfill orders (BackfillOverlap: held by their turns or by nothing)."""
    return OverlapPolicy.ALLOW if origin.startswith(BACKFILL_PREFIX) else job_overlap


def may_start_ahead(overlap: OverlapPolicy) -> bool:
    """A run under ``overlap`` (``run_overlap``) may have its attempt started ahead of its
    time: no other run of its job can change what its start decides. The others are decided
    at their time, and their dispatch says so (``RunDispatch.starts_at_its_time``)."""
    return overlap is OverlapPolicy.ALLOW


def starts_early(run: StartView, now: datetime, early: timedelta) -> bool:
    """The run's attempt may start now, ahead of its time, for a worker that holds it until
    then: its time is at most ``early`` away and its overlap policy allows it (pause and
    delete still reach it: the worker beats before it calls)."""
    return may_start_ahead(run.overlap) and now < run.not_before <= now + early


def shares_job_lock(run: StartView) -> bool:
    """The run's start may hold its job's lock shared with other such starts: under
    OVERLAP_POLICY_ALLOW no other run of the job changes what it decides, and as a first
    attempt it holds nothing whose end would release a WAITING run. Any other start, every
    report and every change to the job hold it alone, so they still see these one by one."""
    return run.overlap is OverlapPolicy.ALLOW and run.attempt == 0


def misfire_check_needed(run: StartView, now: datetime) -> bool:
    """Only a scheduled run's first attempt is measured against the misfire threshold."""
    return run.scheduled and run.attempt == 0 and now - run.not_before > run.misfire.threshold


def decide_start(
    run: StartView,
    job: JobView,
    overlap: OverlapView,
    now: datetime,
    settings: AttemptSettings,
    *,
    delivery_id: str,
    worker_id: str,
    early: timedelta = timedelta(0),
) -> StartDecision:
    """StartAttempt's whole rule, in the design's order: state and time, the job, misfire,
    overlap. ``early``: as in ``check_admission``."""
    answered = check_admission(run, now, delivery_id, worker_id, early=early)
    if answered is not None:
        return answered
    if job.state is None or job.state is JobState.DELETED:
        return _refuse(
            RUN_CANCELLED, RunState.CANCELLED, RunReason.JOB_DELETED, "the job was deleted"
        )
    if job.state is JobState.PAUSED and run.scheduled:
        return _refuse(
            RUN_SKIPPED, RunState.SKIPPED, RunReason.JOB_PAUSED, "the job was paused at start"
        )
    if now < run.not_before:  # ahead of its time (starts_early): ALLOW, not late
        return StartDecision(StartKind.START, call_time=run.not_before)
    missed = misfired(run, now, overlap.newer_scheduled_run)
    if missed is not None:
        return _refuse(RUN_MISSED, RunState.MISSED, RunReason.MISFIRE, missed)
    return _decide_overlap(run, overlap, now, settings)


def misfired(run: StartView, now: datetime, newer_scheduled_run: bool) -> str | None:
    """Why the run is MISSED under its misfire policy if it started at ``now`` (None: it may
    run): it is later than its threshold, and the policy is SKIP, or RUN_ONCE while a later
    scheduled occurrence runs or ran. Decided at start, and when a held run is released."""
    if not misfire_check_needed(run, now):
        return None
    policy = run.misfire.policy
    if policy is MisfirePolicy.SKIP or (policy is MisfirePolicy.RUN_ONCE and newer_scheduled_run):
        late = now - run.not_before
        return f"started {late.total_seconds():.3f} s after its effective time"
    return None


def _decide_overlap(
    run: StartView, overlap: OverlapView, now: datetime, settings: AttemptSettings
) -> StartDecision:
    active = [o for o in overlap.others if o.active]
    if run.overlap is OverlapPolicy.ALLOW or not active:
        return StartDecision(StartKind.START)
    skipped = _refuse(
        RUN_SKIPPED, RunState.SKIPPED, RunReason.OVERLAP, "an earlier run of the job was active"
    )
    if run.overlap is OverlapPolicy.SKIP:
        return skipped
    if run.overlap is OverlapPolicy.BUFFER_ONE:
        if any(o.buffered for o in overlap.others):
            return skipped
        return _refuse(
            RUN_WAITING, RunState.WAITING, detail="waiting for the earlier run of the job to end"
        )
    # CANCEL_PREVIOUS: only earlier runs are superseded; a run that is older than an active one
    # is itself the superseded one.
    if any(o.nominal_time > run.nominal_time for o in active):
        return _refuse(
            RUN_SKIPPED, RunState.SKIPPED, RunReason.OVERLAP, "a newer run of the job is active"
        )
    return StartDecision(
        StartKind.SUPERSEDE,
        until=now + settings.supersede_retry_after,
        cancel_attempts=tuple(o for o in active if o.open_attempt),
        cancel_runs=tuple(o for o in active if not o.open_attempt),
    )


# --- ending -----------------------------------------------------------------------------------


class CallProgress(enum.StrEnum):
    """How far an attempt's call to its target got, as its worker said (None: not said)."""

    # Nothing of the call reached the target: no byte of the request sent, no task started.
    NOT_BEGUN = "NOT_BEGUN"
    # The call began (or was announced) and no answer is known.
    BEGUN = "BEGUN"
    # The target answered (an HTTP status, an exit status): the result is its answer.
    ANSWERED = "ANSWERED"


# Delivery: may an attempt that ended without success be retried?
#
# An attempt's outcome is KNOWN when the target answered (ANSWERED), or when its call is known
# not to have begun (NOT_BEGUN); otherwise it is UNKNOWN: the call began and no answer came
# (BEGUN), or nobody said (None). Nobody says when a worker does not tell (an older build), and
# when the reaper closes an attempt whose worker went silent: then only the worker's own last
# word, recorded by its heartbeats, counts. A worker that sends NOT_BEGUN for an attempt
# promises not to begin the call before a beat announcing BEGUN has been answered with a
# renewal; the renewal and the record of BEGUN are one statement on the open attempt's row, and
# the reaper closes only under that row's lock, so an attempt the reaper finds at NOT_BEGUN was
# never called and never will be (its worker's next beat learns it is closed). Anything else —
# BEGUN, or no word — may have reached the target. A worker's report says how far the call got
# in its own right (the report ends the attempt), e.g. NOT_BEGUN for a connection refused or a
# start handed back unrun, BEGUN for a timeout after the request went out.
#
# At least once, the outcome does not matter: every failure is retried per the retry policy.
# At most once, an unknown outcome is never retried: the run is DEAD_LETTERED with reason
# OUTCOME_UNKNOWN (dead-lettered, so the team is alerted and may redrive it once it has checked
# the target). A known failure follows the usual rules. A cancellation that was asked for (the
# job deleted, the run superseded) still cancels the run: it is not retried either way.


def outcome_known(call: CallProgress | None) -> bool:
    return call in (CallProgress.NOT_BEGUN, CallProgress.ANSWERED)


@dataclass(frozen=True)
class EndFacts:
    """What decides a run's fate when its open attempt ends (read under the run's lock)."""

    attempt: int
    attempt_limit: int
    retry: RetryPolicy  # from the run's snapshot
    cancel_reason: str  # requested on the attempt ("" when none)
    job_deleted: bool
    # The run's earlier attempts that ended HANDED_BACK (read only when this one is a hand-back).
    hand_backs: int = 0
    delivery: Delivery = Delivery.AT_LEAST_ONCE  # from the run's snapshot
    # How far the call got: the report's word, or for the reaper the worker's last heartbeat's.
    call: CallProgress | None = None


@dataclass(frozen=True)
class RunOutcome:
    """The run's new state after an attempt ended, or a start refused it."""

    state: RunState
    reason: RunReason = RunReason.NONE
    reason_detail: str = ""
    next_attempt_time: datetime | None = None
    # A hand-back: the run goes back to QUEUED and its attempt limit rises by one, so the
    # attempt just closed does not count against the budget.
    requeue: bool = False

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES


def truncate_error(text: str, limit: int = MAX_ERROR_BYTES) -> str:
    """At most ``limit`` bytes of UTF-8, cut on a character boundary, NUL shown as U+FFFD
    (an error is kept as text, and PostgreSQL's text holds no NUL)."""
    data = text.replace("\x00", "\ufffd").encode()
    if len(data) <= limit:
        return data.decode()
    return data[:limit].decode(errors="ignore")


def budget_position(facts: EndFacts) -> int:
    """The attempt's place in the current budget (1-based): a redrive starts a fresh budget
    whose backoff starts small again, although attempt numbers keep rising."""
    first_of_budget = facts.attempt_limit - facts.retry.max_attempts
    return max(1, facts.attempt - first_of_budget)


def decide_completion(
    outcome: AttemptOutcome,
    retryable: bool,
    error: str,
    facts: EndFacts,
    now: datetime,
    rand: float,
) -> RunOutcome:
    """What the run becomes when its attempt ended with ``outcome`` at ``now``.

    SUCCEEDED wins over everything. A cancellation that was asked for (SUPERSEDED, or the job
    deleted) cancels the run, whatever the attempt reported: a superseded run is not retried.
    A hand-back (the worker stopped before the attempt ended) queues the run again at once,
    outside the budget: a deploy must not dead-letter a run that was never allowed to finish;
    past ``MAX_HAND_BACKS`` hand-backs of the run it is a retryable failure like any other, and
    its error says so. Otherwise a failure is retried while the budget lasts (TIMED_OUT,
    LEASE_EXPIRED and an unsolicited CANCELLED are retryable), and dead-lettered when the
    budget is spent or the failure is not retryable. At most once, an attempt whose outcome is
    unknown is not retried, hand-back or not (see "Delivery" above).
    """
    detail = truncate_error(error)
    if outcome is AttemptOutcome.SUCCEEDED:
        return RunOutcome(RunState.SUCCEEDED)
    if facts.cancel_reason in (SUPERSEDED, JOB_DELETED):
        return RunOutcome(RunState.CANCELLED, RunReason(facts.cancel_reason), detail)
    if facts.job_deleted:
        return RunOutcome(RunState.CANCELLED, RunReason.JOB_DELETED, detail)
    if facts.delivery is Delivery.AT_MOST_ONCE and not outcome_known(facts.call):
        said = "the call had begun" if facts.call is CallProgress.BEGUN else "no word on the call"
        return RunOutcome(
            RunState.DEAD_LETTERED,
            RunReason.OUTCOME_UNKNOWN,
            truncate_error(
                f"{outcome.value} with {said}: the target may have been called, so the run is "
                f"not retried (at-most-once delivery): {error}"
            ),
        )
    if outcome is AttemptOutcome.HANDED_BACK:
        if facts.hand_backs < MAX_HAND_BACKS:
            return RunOutcome(RunState.QUEUED, RunReason.NONE, detail, now, requeue=True)
        detail = truncate_error(
            f"handed back {facts.hand_backs + 1} times (more than {MAX_HAND_BACKS} are counted "
            f"as failures): {error}"
        )
    if outcome is AttemptOutcome.FAILED and not retryable:
        return RunOutcome(RunState.DEAD_LETTERED, RunReason.NON_RETRYABLE, detail)
    if facts.attempt >= facts.attempt_limit:
        return RunOutcome(RunState.DEAD_LETTERED, RunReason.ATTEMPTS_EXHAUSTED, detail)
    delay = backoff_delay(facts.retry, budget_position(facts), rand)
    return RunOutcome(RunState.RETRY_WAIT, RunReason.NONE, detail, now + delay)


def expiry_outcome(lease_expire_time: datetime, deadline: datetime) -> AttemptOutcome:
    """How an attempt the reaper closes ended: whichever limit ran out first."""
    if deadline <= lease_expire_time:
        return AttemptOutcome.TIMED_OUT
    return AttemptOutcome.LEASE_EXPIRED


NEVER_CALLED = "its worker went before the call of an attempt started ahead of its time"


def decide_expiry(
    lease_expire_time: datetime,
    deadline: datetime,
    facts: EndFacts,
    now: datetime,
    rand: float,
    *,
    never_called: bool = False,
) -> tuple[AttemptOutcome, str, RunOutcome]:
    """The attempt's outcome, its error text, and the run's new state, for an attempt whose
    lease expired or whose deadline passed at ``now``. One known ``never_called`` (started
    ahead, its worker gone before its call) is given back like a hand-back: its target was
    not called, so it spends no attempt of the budget (up to ``MAX_HAND_BACKS``)."""
    if never_called:
        outcome = AttemptOutcome.HANDED_BACK
        return (
            outcome,
            NEVER_CALLED,
            decide_completion(outcome, True, NEVER_CALLED, facts, now, rand),
        )
    outcome = expiry_outcome(lease_expire_time, deadline)
    if outcome is AttemptOutcome.TIMED_OUT:
        error = "the attempt outlived its timeout and grace period"
    else:
        error = "the attempt's lease expired without a heartbeat"
    return outcome, error, decide_completion(outcome, True, error, facts, now, rand)
