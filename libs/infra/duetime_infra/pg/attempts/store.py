"""Attempts on PostgreSQL: starting one, renewing leases, reporting how one ended.

Each operation is one transaction that locks the run's row first, then its job's row; the
decisions are ``duetime_core.attempts``' and this module only reads the facts and writes the
answer. The helpers that end a run (dead-letter event, BUFFER_ONE release) are shared with the
reaper.
"""

from __future__ import annotations

import enum
import json
import logging
import random
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeAlias

import asyncpg

from duetime_core.attempts import (
    ATTEMPT_CLOSED,
    FINAL_STATES,
    JOB_DELETED,
    JOB_PAUSED,
    RUN_NOT_FOUND,
    AttemptSettings,
    CallProgress,
    EndFacts,
    JobView,
    OtherRun,
    OverlapView,
    RunOutcome,
    StartDecision,
    StartKind,
    StartView,
    check_admission,
    decide_completion,
    decide_start,
    misfire_check_needed,
    shares_job_lock,
    truncate_error,
)
from duetime_core.errors import Aborted, Unavailable
from duetime_core.jobspec import CallSigning, JobSpec, JobState, MisfirePolicy, OverlapPolicy
from duetime_core.records import AttemptOutcome, RunReason, RunState
from duetime_core.runkey import BACKFILL_PREFIX, SCHEDULE_ORIGIN, RunKey
from duetime_infra.codec.spec_json import spec_from_json
from duetime_infra.deadletter import Notification, dead_letter_row
from duetime_infra.dispatch import OutboxRow
from duetime_infra.pg.dispatch.admission import dispatch_runs
from duetime_infra.pg.dispatch.outbox_writer import insert_outbox
from duetime_infra.pg.dispatch.redispatch import key_of, redispatch_row
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.sql import q
from duetime_infra.telemetry import instruments

log = logging.getLogger(__name__)

Row = asyncpg.Record
Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"
Rand = Callable[[], float]


class StartAnswer(enum.Enum):
    STARTED = "STARTED"
    TOO_EARLY = "TOO_EARLY"
    REFUSED = "REFUSED"


@dataclass(frozen=True)
class RunToExecute:
    """The frozen definition of a started run, as the worker needs it."""

    run_id: uuid.UUID
    key: RunKey
    team_id: str
    effective_time: datetime
    snapshot: JobSpec
    traceparent: str
    # The team's default_call_signing as the run starts: what a job that does not say follows.
    team_signing: CallSigning = CallSigning.OFF
    # The team's active signing keys as the run starts: the only ones its call may be signed
    # with (a key revoked before is never used, even from a worker's kept keys).
    team_key_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class StartResult:
    answer: StartAnswer
    server_time: datetime
    # The run's effective time; for TOO_EARLY, when to ask again.
    effective_time: datetime | None = None
    attempt: int = 0
    lease_expire_time: datetime | None = None
    run: RunToExecute | None = None
    refusal: str = ""
    # STARTED ahead of the run's time: when the worker may call (None: now).
    call_time: datetime | None = None

    @classmethod
    def refused(
        cls, now: datetime, refusal: str, effective_time: datetime | None = None
    ) -> StartResult:
        return cls(StartAnswer.REFUSED, now, effective_time=effective_time, refusal=refusal)


@dataclass(frozen=True)
class AttemptRef:
    run_id: uuid.UUID
    number: int
    # How far its call got, as a heartbeat says (None: not said).
    call: CallProgress | None = None


@dataclass(frozen=True)
class Directive:
    ref: AttemptRef
    cancel: bool
    lease_expire_time: datetime | None  # for a continue
    reason: str = ""  # for a cancel: ATTEMPT_CLOSED, SUPERSEDED, JOB_DELETED


@dataclass(frozen=True)
class HeartbeatResult:
    server_time: datetime
    directives: list[Directive]


@dataclass(frozen=True)
class CompleteResult:
    run_state: RunState
    next_attempt_time: datetime | None


def snapshot_of(row: Row) -> JobSpec:
    doc: Any = row["job_snapshot"]
    return spec_from_json(json.loads(doc) if isinstance(doc, str) else doc)


def stale_attempt(detail: str) -> Aborted:
    """The refusal of a report from an attempt that is not the run's open one (counted as a
    fencing refusal: it is always raised, and rolls its transaction back)."""
    instruments.fencing_refused("complete", "attempt")
    return Aborted(f"stale attempt: {detail}", reason="STALE_ATTEMPT")


@asynccontextmanager
async def transaction(pool: Pool) -> AsyncIterator[Conn]:
    """A transaction whose lock waits, deadlocks and statement timeouts (the scheduler's
    sessions set short ones), or a lock table that is full (a herd's batches hold a job lock
    each: max_locks_per_transaction), surface as a retryable UNAVAILABLE."""
    try:
        async with pool.acquire() as conn, conn.transaction():
            yield conn
    except (
        asyncpg.exceptions.LockNotAvailableError,
        asyncpg.exceptions.DeadlockDetectedError,
        asyncpg.exceptions.SerializationError,
        asyncpg.exceptions.QueryCanceledError,
        asyncpg.exceptions.OutOfMemoryError,
    ) as error:
        raise Unavailable("the run is busy; try again", reason="CONTENDED") from error


async def release_waiting(conn: Conn, job_id: uuid.UUID) -> list[OutboxRow]:
    """The job's WAITING runs let go, admitted to dispatch (queued, or held by its team's
    quota): under BUFFER_ONE, once nothing holds the job; of each ONE_AT_A_TIME backfill, the
    next once its previous run ended. Call it under the job's row lock, after a run of the job
    reached a final state."""
    waiting = await conn.fetchrow(q("attempt_release_waiting"), job_id)
    turns = await conn.fetch(q("attempt_backfill_turns"), job_id)
    rows = [*turns, *([waiting] if waiting is not None else [])]
    if not rows:
        return []
    now: datetime = rows[0]["now"]
    return (await dispatch_runs(conn, rows, now, not_before=now)).outbox


async def _notification(conn: Conn, team_id: str) -> Notification:
    row = await conn.fetchrow(q("attempt_team_notification"), team_id)
    if row is None:
        return Notification("", CallSigning.OFF)
    return Notification(row["notification_url"], CallSigning(row["default_call_signing"]))


async def apply_run_outcome(
    conn: Conn, run: Row, attempt: int, outcome: RunOutcome, now: datetime
) -> None:
    """Writes the run's new state after its attempt ``attempt`` ended, with the dead-letter
    event, the release of a WAITING run, or a hand-back's new dispatch in the same
    transaction."""
    if outcome.requeue:
        await conn.execute(
            q("attempt_run_hand_back"),
            run["run_id"],
            run["nominal_time"],
            outcome.next_attempt_time,
            outcome.reason_detail,
        )
        await insert_outbox(conn, [redispatch_row(run, now)])
        return
    await conn.execute(
        q("attempt_run_set_state"),
        run["run_id"],
        run["nominal_time"],
        outcome.state.value,
        outcome.reason.value,
        outcome.reason_detail,
        outcome.next_attempt_time,
    )
    rows: list[OutboxRow] = []
    if outcome.state is RunState.DEAD_LETTERED:
        rows.append(
            dead_letter_row(
                run_id=run["run_id"],
                key=key_of(run),
                team_id=run["team_id"],
                attempt=attempt,
                reason=outcome.reason.value,
                last_error=outcome.reason_detail,
                traceparent=run["traceparent"],
                now=now,
                notification=await _notification(conn, run["team_id"]),
            )
        )
    if outcome.final:
        rows.extend(await release_waiting(conn, run["job_id"]))
    await insert_outbox(conn, rows)


def start_view(row: Row, snapshot: JobSpec) -> StartView:
    """What the start decision needs of a run, from its locked row (one start or a batch's)."""
    return StartView(
        state=RunState(row["state"]),
        scheduled=row["origin"] == SCHEDULE_ORIGIN,
        nominal_time=row["nominal_time"],
        effective_time=row["effective_time"],
        next_attempt_time=row["next_attempt_time"],
        attempt=row["attempt"],
        start_delivery_id=row["start_delivery_id"],
        open_attempt_worker=row["open_worker_id"],
        misfire=snapshot.misfire,
        # A backfill's runs are ordered by the backfill's own overlap (BackfillOverlap), not
        # the job's: held by their turns or by nothing.
        overlap=OverlapPolicy.ALLOW
        if row["origin"].startswith(BACKFILL_PREFIX)
        else snapshot.overlap,
    )


def other_run(row: Row) -> OtherRun:
    """Another open run of the same job, from its row, for the overlap check of a start."""
    return OtherRun(
        run_id=row["run_id"],
        nominal_time=row["nominal_time"],
        state=RunState(row["state"]),
        attempt=row["attempt"],
        open_attempt=row["open_attempt"],
        cancel_reason=row["cancel_reason"],
    )


def _open_attempt_of(row: Row | None, token: int, worker_id: str) -> Row:
    """The locked run row of a report, if attempt ``token`` is its open attempt and
    ``worker_id`` holds it; otherwise ABORTED STALE_ATTEMPT (the report changes nothing)."""
    if row is None:
        raise stale_attempt("no such run")
    if row["state"] != RunState.RUNNING.value or row["attempt"] != token:
        raise stale_attempt(
            f"attempt {token} is not the run's open attempt (run {row['state']}, "
            f"latest attempt {row['attempt']})"
        )
    if row["open_worker_id"] != worker_id:
        raise stale_attempt(f"attempt {token} is not held by worker {worker_id!r}")
    return row


async def _end_facts(
    conn: Conn,
    row: Row,
    job: Row | None,
    closed: Row,
    token: int,
    outcome: AttemptOutcome,
    call: CallProgress | None,
) -> EndFacts:
    """What the end of attempt ``token`` is decided on: its run's definition and budget, its
    job (None: gone), the attempt row just closed and, for a hand-back, how many of the
    run's attempts were handed back."""
    hand_backs = 0
    if outcome is AttemptOutcome.HANDED_BACK:  # rare: a worker stopping
        hand_backs = await conn.fetchval(
            q("attempt_run_hand_backs"),
            row["run_id"],
            row["nominal_time"],
            token,
            row["budget_start_attempt"],
        )
    snapshot = snapshot_of(row)
    return EndFacts(
        attempt=token,
        attempt_limit=row["attempt_limit"],
        retry=snapshot.retry,
        cancel_reason=closed["cancel_reason"],
        job_deleted=job is None or job["state"] == JobState.DELETED.value,
        hand_backs=hand_backs,
        delivery=snapshot.delivery,
        call=call,
    )


def _record_completion(
    run_id: uuid.UUID, token: int, outcome: AttemptOutcome, result: RunOutcome
) -> None:
    """After COMMIT: a reported attempt's end, logged and counted."""
    log.info(
        "attempt completed",
        extra={
            "action": "attempt_completed",
            "run_id": str(run_id),
            "attempt": token,
            "outcome": outcome.value,
            "run_state": result.state.value,
            "reason": result.reason.value,
        },
    )
    instruments.attempt_closed(outcome.value, "worker")
    if result.final:
        instruments.runs_finished(result.state.value, result.reason.value)


def _first_call(closed: Row, attempt: int, outcome: AttemptOutcome) -> datetime | None:
    """When a run's first attempt, started ahead of its time, began its call (None: it did
    not start early, is not the first, or was handed back without being run)."""
    if attempt != 1 or not closed["early"] or outcome is AttemptOutcome.HANDED_BACK:
        return None
    begun: datetime = closed["start_time"]
    return begun


def _replayed_call_time(row: Row) -> datetime | None:
    """A repeated start's call time: its attempt's, while that is ahead of now."""
    call_time: datetime | None = row["open_call_time"]
    return call_time if call_time is not None and call_time > row["now"] else None


def count_first_start(row: Row, started: datetime) -> None:
    """After COMMIT: the run's first attempt started at ``started`` (a retry's start is set by
    its backoff): its lateness from the effective, nominal and eligible times."""
    eligible: datetime = row["eligible_time"] or row["effective_time"]
    instruments.attempt_started(
        row["priority"],
        started - row["effective_time"],
        started - row["nominal_time"],
        started - eligible,
    )


def _count_start(row: Row, decision: StartDecision, result: StartResult) -> None:
    """After COMMIT: a first attempt's start lateness, or the final state a refused start left
    the run in."""
    if result.answer is StartAnswer.STARTED and decision.kind is not StartKind.REPLAY:
        # An attempt started ahead of its time is counted when its call's start is reported.
        if result.attempt == 1 and result.call_time is None:
            count_first_start(row, result.server_time)
    elif decision.new_state is not None and decision.new_state in FINAL_STATES:
        instruments.runs_finished(decision.new_state.value, decision.run_reason.value)


class AttemptStore:
    def __init__(self, pool: Pool, settings: AttemptSettings, rand: Rand = random.random) -> None:
        self._pool = pool
        self._settings = settings
        self._rand = rand

    @property
    def pool(self) -> Pool:
        return self._pool

    @property
    def settings(self) -> AttemptSettings:
        return self._settings

    # --- StartAttempt ---------------------------------------------------------------------

    def early_window(self, early: bool) -> timedelta:
        """How long before its time a run may start for a worker that asked ``early``."""
        return self._settings.max_early_start if early else timedelta(0)

    async def start(
        self, run_id: uuid.UUID, delivery_id: str, worker_id: str, early: bool = False
    ) -> StartResult:
        window = self.early_window(early)
        async with transaction(self._pool) as conn:
            row = await conn.fetchrow(q("attempt_run_lock"), run_id)
            if row is None:
                now: datetime = await conn.fetchval(q("db_now"))
                return StartResult.refused(now, RUN_NOT_FOUND)
            snapshot = snapshot_of(row)
            view = start_view(row, snapshot)
            now = row["now"]
            decision = check_admission(view, now, delivery_id, worker_id, early=window)
            if decision is None:
                lock = "attempt_job_lock_shared" if shares_job_lock(view) else "attempt_job_lock"
                job = await conn.fetchrow(q(lock), row["job_id"])
                if job is not None:
                    now = job["now"]
                # Other runs of the job decide nothing under OVERLAP_POLICY_ALLOW.
                others = (
                    []
                    if view.overlap is OverlapPolicy.ALLOW
                    else await conn.fetch(
                        q("attempt_overlap_runs"), row["job_id"], run_id, row["nominal_time"]
                    )
                )
                newer = False
                if (
                    misfire_check_needed(view, now)
                    and view.misfire.policy is MisfirePolicy.RUN_ONCE
                ):
                    newer = await conn.fetchval(
                        q("attempt_newer_scheduled_exists"), row["job_id"], row["nominal_time"]
                    )
                decision = decide_start(
                    view,
                    JobView(JobState(job["state"]) if job is not None else None),
                    OverlapView(tuple(other_run(o) for o in others), bool(newer)),
                    now,
                    self._settings,
                    delivery_id=delivery_id,
                    worker_id=worker_id,
                    early=window,
                )
            result = await self._apply_start(
                conn, row, snapshot, decision, now, delivery_id, worker_id
            )
        _count_start(row, decision, result)
        return result

    async def _apply_start(
        self,
        conn: Conn,
        row: Row,
        snapshot: JobSpec,
        decision: StartDecision,
        now: datetime,
        delivery_id: str,
        worker_id: str,
    ) -> StartResult:
        match decision.kind:
            case StartKind.REPLAY:
                leases = await self.renew_replayed(conn, [row])
                return self.replayed_result(row, snapshot, leases)
            case StartKind.TOO_EARLY:
                return StartResult(StartAnswer.TOO_EARLY, now, effective_time=decision.until)
            case StartKind.REFUSE:
                if decision.new_state is not None:
                    await self._refuse(conn, row, decision)
                return StartResult.refused(now, decision.refusal, row["effective_time"])
            case StartKind.SUPERSEDE:
                if not await self._supersede(conn, decision):
                    return StartResult(StartAnswer.TOO_EARLY, now, effective_time=decision.until)
        started = await conn.fetchrow(
            q("attempt_start"),
            row["run_id"],
            row["nominal_time"],
            delivery_id,
            worker_id,
            self._settings.lease,
            snapshot.attempt_timeout + self._settings.timeout_grace,
            decision.call_time,
            self._settings.ahead_lease,
        )
        if started is None:  # the run row is locked and QUEUED: this cannot happen
            raise RuntimeError(f"run {row['run_id']} did not start")
        return self.started_result(
            row,
            snapshot,
            started["number"],
            started["lease_expire_time"],
            started["now"],
            decision.call_time,
        )

    async def renew_replayed(self, conn: Conn, rows: Sequence[Row]) -> dict[uuid.UUID, datetime]:
        """The renewed leases of repeated starts' open attempts (rows locked by the caller),
        by run id; an attempt being cancelled keeps its lease and is left out."""
        if not rows:
            return {}
        renewed = await conn.fetch(
            q("attempt_renew_replayed"),
            [r["run_id"] for r in rows],
            [r["nominal_time"] for r in rows],
            [r["attempt"] for r in rows],
            self._settings.lease,
        )
        return {r["run_id"]: r["lease_expire_time"] for r in renewed}

    def replayed_result(
        self, row: Row, snapshot: JobSpec, leases: dict[uuid.UUID, datetime]
    ) -> StartResult:
        """A repeated start's answer: its attempt, with the lease ``renew_replayed`` gave."""
        lease = leases.get(row["run_id"], row["open_lease_expire_time"])
        return self.started_result(
            row, snapshot, row["attempt"], lease, row["now"], _replayed_call_time(row)
        )

    @staticmethod
    def started_result(
        row: Row,
        snapshot: JobSpec,
        attempt: int,
        lease_expire_time: datetime,
        now: datetime,
        call_time: datetime | None = None,
    ) -> StartResult:
        return StartResult(
            StartAnswer.STARTED,
            now,
            effective_time=row["effective_time"],
            attempt=attempt,
            lease_expire_time=lease_expire_time,
            call_time=call_time,
            run=RunToExecute(
                run_id=row["run_id"],
                key=key_of(row),
                team_id=row["team_id"],
                effective_time=row["effective_time"],
                snapshot=snapshot,
                traceparent=row["traceparent"],
                team_signing=CallSigning(row["team_call_signing"] or CallSigning.OFF),
                team_key_ids=tuple(row["team_key_ids"]),
            ),
        )

    async def _refuse(self, conn: Conn, row: Row, decision: StartDecision) -> None:
        assert decision.new_state is not None
        await conn.execute(
            q("attempt_run_set_state"),
            row["run_id"],
            row["nominal_time"],
            decision.new_state.value,
            decision.run_reason.value,
            decision.reason_detail,
            None,
        )
        if decision.new_state is not RunState.WAITING:
            # A requeued retry that will not run any more frees the job for a WAITING run.
            await insert_outbox(conn, await release_waiting(conn, row["job_id"]))

    async def _supersede(self, conn: Conn, decision: StartDecision) -> bool:
        """Tells the previous runs to stop; True when nothing is left to wait for."""
        if decision.cancel_attempts:
            await conn.execute(
                q("attempt_request_cancel"),
                [o.run_id for o in decision.cancel_attempts],
                [o.nominal_time for o in decision.cancel_attempts],
                [o.attempt for o in decision.cancel_attempts],
                RunReason.SUPERSEDED.value,
            )
        cancelled: list[Row] = []
        if decision.cancel_runs:
            cancelled = await conn.fetch(
                q("attempt_cancel_idle_runs"),
                [o.run_id for o in decision.cancel_runs],
                [o.nominal_time for o in decision.cancel_runs],
                RunReason.SUPERSEDED.value,
                "replaced by a newer run of the job",
            )
        return decision.start_after_cancel and len(cancelled) == len(decision.cancel_runs)

    # --- Heartbeat ------------------------------------------------------------------------

    async def heartbeat(self, worker_id: str, refs: Sequence[AttemptRef]) -> HeartbeatResult:
        """Renews the listed attempts in one statement; one directive per attempt, in order."""
        if not refs:
            async with self._pool.acquire() as conn:
                now: datetime = await conn.fetchval(q("db_now"))
            return HeartbeatResult(now, [])
        async with transaction(self._pool) as conn:
            rows = await conn.fetch(
                q("attempt_heartbeat"),
                [r.run_id for r in refs],
                [r.number for r in refs],
                worker_id,
                self._settings.lease,
                [r.call.value if r.call is not None else None for r in refs],
            )
        directives: list[Directive] = []
        for ref, row in zip(refs, rows, strict=True):
            if row["lease_expire_time"] is not None:
                directives.append(Directive(ref, False, row["lease_expire_time"]))
            elif not row["open"]:
                directives.append(Directive(ref, True, None, ATTEMPT_CLOSED))
            elif row["cancel_reason"]:
                directives.append(Directive(ref, True, None, row["cancel_reason"]))
            elif row["job_deleted"]:
                directives.append(Directive(ref, True, None, JOB_DELETED))
            elif row["job_paused"]:
                directives.append(Directive(ref, True, None, JOB_PAUSED))
            else:  # closed between the statement's read and its renewal
                directives.append(Directive(ref, True, None, ATTEMPT_CLOSED))
        # Beats for attempts the reaper closed are fenced out (a frozen worker that woke up);
        # one crossing this worker's own report of the attempt is not a refusal.
        instruments.fencing_refused("heartbeat", "attempt", sum(1 for r in rows if r["reaped"]))
        return HeartbeatResult(rows[0]["now"], directives)

    # --- CompleteAttempt ------------------------------------------------------------------

    async def complete(
        self,
        run_id: uuid.UUID,
        token: int,
        worker_id: str,
        outcome: AttemptOutcome,
        retryable: bool,
        error: str,
        call_time: datetime | None = None,
        call: CallProgress | None = None,
    ) -> CompleteResult:
        """The compare-and-set of a report: only the run's open attempt ``token``, held by
        ``worker_id``, may write; anything else is ABORTED STALE_ATTEMPT and changes nothing.
        ``call_time``: when the call began, the start of an attempt started ahead of its
        time. ``call`` is how far the report says the call got (None: not said)."""
        async with transaction(self._pool) as conn:
            row = _open_attempt_of(
                await conn.fetchrow(q("attempt_run_lock"), run_id), token, worker_id
            )
            job = await conn.fetchrow(q("attempt_job_lock"), row["job_id"])
            now: datetime = job["now"] if job is not None else row["now"]
            error = truncate_error(error)
            closed = await conn.fetchrow(
                q("attempt_close"),
                run_id,
                row["nominal_time"],
                token,
                outcome.value,
                error,
                now,
                call_time,
                call.value if call is not None else None,
            )
            if closed is None:  # the run row is locked and RUNNING: this cannot happen
                raise stale_attempt(f"attempt {token} is already closed")
            first_call = _first_call(closed, token, outcome)
            if first_call is not None:
                await conn.execute(
                    q("attempt_run_first_start"), run_id, row["nominal_time"], first_call
                )
            facts = await _end_facts(conn, row, job, closed, token, outcome, call)
            result = decide_completion(outcome, retryable, error, facts, now, self._rand())
            await apply_run_outcome(conn, row, token, result, now)
        _record_completion(run_id, token, outcome, result)
        if first_call is not None:
            count_first_start(row, first_call)
        return CompleteResult(result.state, result.next_attempt_time)
