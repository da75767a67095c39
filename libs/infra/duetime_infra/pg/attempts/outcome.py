"""What every attempt path shares: its transaction, the locks on its runs' and jobs' rows (a
run's row made the typed row of its path's query), the end of a run (dead-letter event,
BUFFER_ONE release, hand-back) and the lateness count of a first start. The reaper ends runs
through the same helpers."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import datetime
from typing import NamedTuple, Protocol

import asyncpg

from duetime_core.attempts import RunOutcome
from duetime_core.errors import Aborted, Unavailable
from duetime_core.jobspec import CallSigning
from duetime_core.records import RunState
from duetime_infra.deadletter import Notification, dead_letter_row
from duetime_infra.dispatch import OutboxRow
from duetime_infra.pg.attempts.results import Pool
from duetime_infra.pg.dispatch.admission import RunToDispatch, dispatch_runs
from duetime_infra.pg.dispatch.outbox_writer import insert_outbox
from duetime_infra.pg.dispatch.redispatch import (
    Redispatchable,
    StoredRun,
    key_of,
    redispatch_row,
    traceparent_of_run,
)
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.sql import q, waiting
from duetime_infra.pg.typed_row import RowT, typed_row
from duetime_infra.telemetry import instruments


class LockedJob(NamedTuple):
    """A job's row under its job's lock (``attempt_job_lock``, its shared and batch forms)."""

    job_id: uuid.UUID
    state: str
    now: datetime


class StartTimes(Protocol):
    """What the lateness of a run's first start is counted from."""

    @property
    def priority(self) -> str: ...
    @property
    def effective_time(self) -> datetime: ...
    @property
    def nominal_time(self) -> datetime: ...
    @property
    def eligible_time(self) -> datetime | None: ...


def stale_attempt(detail: str) -> Aborted:
    """The refusal of a report from an attempt that is not the run's open one (counted as a
    fencing refusal); the report changes nothing."""
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


async def lock_runs(
    conn: Conn,
    query: str,
    row_type: type[RowT],
    run_ids: list[uuid.UUID],
    wait: bool,
    *args: object,
) -> list[RowT]:
    """The named runs' rows, locked by ``query`` (SKIP LOCKED: the rows no other transaction
    holds) or, for a waiting pass, by its ``waiting`` form, which waits for them; as typed
    rows of ``row_type``."""
    rows = await conn.fetch(waiting(query) if wait else q(query), run_ids, *args)
    return [typed_row(row_type, r) for r in rows]


async def lock_jobs(
    conn: Conn, shared: Mapping[uuid.UUID, bool], wait: bool
) -> dict[uuid.UUID, LockedJob]:
    """The jobs' rows by id, each under its job's lock (attempt_job_lock), held shared with
    other starts or alone as ``shared`` says of each (``shares_job_lock``): those no other
    transaction holds, or, for a waiting pass (one run), its job's after waiting for it."""
    if not shared:
        return {}
    if wait:
        ((job_id, together),) = shared.items()
        lock = "attempt_job_lock_shared" if together else "attempt_job_lock"
        job = await conn.fetchrow(q(lock), job_id)
        return {} if job is None else {job_id: typed_row(LockedJob, job)}
    rows = await conn.fetch(q("attempt_batch_jobs_lock"), list(shared), list(shared.values()))
    return {j["job_id"]: typed_row(LockedJob, j) for j in rows}


async def release_waiting(conn: Conn, job_id: uuid.UUID) -> list[OutboxRow]:
    """The job's WAITING runs let go, admitted to dispatch (queued, or held by its team's
    quota): under BUFFER_ONE, once nothing holds the job; of each ONE_AT_A_TIME backfill, the
    next once its previous run ended. Call it under the job's lock, after a run of the job
    reached a final state."""
    buffered = await conn.fetchrow(q("attempt_release_waiting"), job_id)
    turns = await conn.fetch(q("attempt_backfill_turns"), job_id)
    rows = [*turns, *([buffered] if buffered is not None else [])]
    if not rows:
        return []
    now: datetime = rows[0]["now"]
    runs = [typed_row(RunToDispatch, r) for r in rows]
    return (await dispatch_runs(conn, runs, now, not_before=now)).outbox


async def _notification(conn: Conn, team_id: str) -> Notification:
    row = await conn.fetchrow(q("attempt_team_notification"), team_id)
    if row is None:
        return Notification("", CallSigning.OFF)
    return Notification(row["notification_url"], CallSigning(row["default_call_signing"]))


async def apply_run_outcome(
    conn: Conn, run: Redispatchable, attempt: int, outcome: RunOutcome, now: datetime
) -> None:
    """Writes the run's new state after its attempt ``attempt`` ended (``set_run_state``), or
    a hand-back's new dispatch, in the same transaction."""
    if outcome.requeue:
        await conn.execute(
            q("attempt_run_hand_back"),
            run.run_id,
            run.nominal_time,
            outcome.next_attempt_time,
            outcome.reason_detail,
        )
        await insert_outbox(conn, [redispatch_row(run, now)])
        return
    await set_run_state(conn, run, attempt, outcome, now)


async def set_run_state(
    conn: Conn, run: StoredRun, attempt: int, outcome: RunOutcome, now: datetime
) -> None:
    """Writes the run's new state after its attempt ``attempt`` ended other than handed back
    (or a start refused it: ``attempt`` is then its last), with the dead-letter event and the
    release of a WAITING run in the same transaction."""
    await conn.execute(
        q("attempt_run_set_state"),
        run.run_id,
        run.nominal_time,
        outcome.state.value,
        outcome.reason.value,
        outcome.reason_detail,
        outcome.next_attempt_time,
    )
    rows: list[OutboxRow] = []
    if outcome.state is RunState.DEAD_LETTERED:
        rows.append(
            dead_letter_row(
                run_id=run.run_id,
                key=key_of(run),
                team_id=run.team_id,
                attempt=attempt,
                reason=outcome.reason.value,
                last_error=outcome.reason_detail,
                traceparent=traceparent_of_run(run),
                now=now,
                notification=await _notification(conn, run.team_id),
            )
        )
    if outcome.final:
        # A run that ended (a requeued retry a start refused, too) frees its job for a WAITING
        # run, and a ONE_AT_A_TIME backfill's run its next turn. A refused first attempt holds
        # the job's lock only shared, but no BUFFER_ONE run waits on it, and a turn released
        # twice is not: its row's lock makes the second see it no longer WAITING.
        rows.extend(await release_waiting(conn, run.job_id))
    await insert_outbox(conn, rows)


def count_first_start(row: StartTimes, started: datetime) -> None:
    """After COMMIT: the run's first attempt started at ``started`` (a retry's start is set by
    its backoff): its lateness from the effective, nominal and eligible times."""
    eligible = row.eligible_time or row.effective_time
    instruments.attempt_started(
        row.priority,
        started - row.effective_time,
        started - row.nominal_time,
        started - eligible,
    )
