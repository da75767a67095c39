"""The partition owner's housekeeping of attempts: those whose lease expired or whose deadline
passed are closed (due retries are queued again by ``dispatcher``).

It acts only on the partitions whose fencing tokens the caller passes, one batch per call
(``FOR UPDATE SKIP LOCKED``), in one transaction that ends with ``fence``: if a newer owner
holds any of the partitions, ``FencingLost`` is raised and the whole batch rolls back. The
caller loops while a call returns ``limit``.
"""

from __future__ import annotations

import json
import logging
import random
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple, TypeAlias

import asyncpg

from duetime_core.attempts import CallProgress, EndFacts, RunOutcome, decide_expiry
from duetime_core.jobspec import JobSpec, JobState
from duetime_core.records import AttemptOutcome
from duetime_infra.codec.spec_json import spec_from_json
from duetime_infra.pg.attempts.outcome import apply_run_outcome
from duetime_infra.pg.attempts.results import Rand
from duetime_infra.pg.fencing import FencingToken, fence
from duetime_infra.pg.pool import Conn, generic_plans
from duetime_infra.pg.sql import q
from duetime_infra.pg.typed_row import typed_row
from duetime_infra.telemetry import instruments

log = logging.getLogger(__name__)

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"


class ExpiredRun(NamedTuple):
    """A run whose open attempt expired, as ``reaper_expired`` locks it: its row, its job
    version's definition (``job_snapshot``), target kind and overlap policy, and the
    attempt's number."""

    run_id: uuid.UUID
    job_id: uuid.UUID
    nominal_time: datetime
    origin: str
    team_id: str
    partition: int
    effective_time: datetime
    priority: str
    traceparent: str
    trace_context: bytes | None
    target_kind: str | None
    job_overlap: str | None
    attempt_limit: int
    budget_start_attempt: int
    job_snapshot: Any
    open_number: int

    def snapshot(self) -> JobSpec:
        doc = self.job_snapshot
        return spec_from_json(json.loads(doc) if isinstance(doc, str) else doc)


def held_lease(lease_expire_time: datetime, held_until: datetime | None) -> datetime:
    """An attempt's lease: its row's, or longer while its worker process's record holds it (an
    early attempt past its pre-call beat, ``attempt_heartbeat``)."""
    return lease_expire_time if held_until is None else max(lease_expire_time, held_until)


def _partitions(tokens: Sequence[FencingToken]) -> list[int]:
    return sorted({t.partition for t in tokens})


def _touched(tokens: Sequence[FencingToken], rows: Sequence[ExpiredRun]) -> list[FencingToken]:
    """The tokens of the partitions a batch changed: only those need fencing, and fencing every
    owned partition on every pass would rewrite hundreds of token rows a second for nothing."""
    partitions = {r.partition for r in rows}
    return [t for t in tokens if t.partition in partitions]


async def reap_expired_attempts(
    pool: Pool,
    tokens: Sequence[FencingToken],
    limit: int,
    *,
    rand: Rand = random.random,
) -> int:
    """Closes open attempts of the partitions whose lease expired (LEASE_EXPIRED) or whose
    deadline passed (TIMED_OUT), and retries, dead-letters or cancels their runs; returns how
    many attempts were closed."""
    partitions = _partitions(tokens)
    if not partitions or limit <= 0:
        return 0
    ended: list[tuple[AttemptOutcome, RunOutcome]] = []
    async with pool.acquire() as conn, conn.transaction():
        await generic_plans(conn)
        expired = await conn.fetch(q("reaper_expired"), partitions, limit)
        runs = [typed_row(ExpiredRun, r) for r in expired]
        if not runs:
            return 0
        job_ids = sorted({r.job_id for r in runs})
        jobs = {j["job_id"]: j["state"] for j in await conn.fetch(q("reaper_jobs_lock"), job_ids)}
        # Attempt rows are locked in run_id order, as heartbeats lock them: no deadlock.
        for run in sorted(runs, key=lambda r: r.run_id):
            reaped = await _reap(conn, run, jobs.get(run.job_id), rand)
            if reaped is not None:
                ended.append(reaped)
        await fence(conn, _touched(tokens, runs), operation="reap")
    for outcome, result in ended:
        instruments.attempt_lease_expired(outcome.value)
        if result.final:
            instruments.runs_finished(result.state.value, result.reason.value)
    if ended:
        log.info("attempts reaped", extra={"action": "attempts_reaped", "count": len(ended)})
    return len(ended)


async def _reap(
    conn: Conn, run: ExpiredRun, job_state: str | None, rand: Rand
) -> tuple[AttemptOutcome, RunOutcome] | None:
    """Closes the run's expired open attempt and moves the run on; None when a heartbeat
    renewed it since the scan (or it closed meanwhile)."""
    number = run.open_number
    attempt = await conn.fetchrow(q("reaper_attempt_lock"), run.run_id, run.nominal_time, number)
    if attempt is None:
        return None
    now: datetime = attempt["now"]
    lease = held_lease(attempt["lease_expire_time"], attempt["held_until"])
    if lease > now and attempt["deadline"] > now:
        if lease > attempt["lease_expire_time"]:  # held by its process's record
            await conn.execute(q("attempt_hold"), run.run_id, run.nominal_time, number, lease)
        return None  # renewed since the scan, or held
    never_called: bool = attempt["never_called"]
    outcome, error, result = decide_expiry(
        lease,
        attempt["deadline"],
        await _expiry_facts(conn, run, attempt, job_state),
        now,
        rand(),
        never_called=never_called,
    )
    await conn.execute(
        q("attempt_close"),
        run.run_id,
        run.nominal_time,
        number,
        outcome.value,
        error,
        now,
        None,  # no reported call time
        None,  # nor progress: the heartbeats' record stands
        False,  # nor a first start: its run's stands as its start gave it
    )
    await apply_run_outcome(conn, run, number, result, now)
    return outcome, result


async def _expiry_facts(
    conn: Conn, run: ExpiredRun, attempt: asyncpg.Record, job_state: str | None
) -> EndFacts:
    """What the end of an expired attempt is decided on (its job's state None: gone)."""
    number = run.open_number
    never_called: bool = attempt["never_called"]
    hand_backs = 0
    if never_called:  # rare: counted as a hand-back of the run's
        hand_backs = await conn.fetchval(
            q("attempt_run_hand_backs"),
            run.run_id,
            run.nominal_time,
            number,
            run.budget_start_attempt,
        )
    snapshot = run.snapshot()
    said = attempt["call_progress"]
    return EndFacts(
        attempt=number,
        attempt_limit=run.attempt_limit,
        retry=snapshot.retry,
        cancel_reason=attempt["cancel_reason"],
        job_deleted=(job_state or JobState.DELETED.value) == JobState.DELETED.value,
        hand_backs=hand_backs,
        delivery=snapshot.delivery,
        # Known not begun (started ahead, never called), else the worker's last word in its
        # heartbeats: see duetime_core.attempts.
        call=CallProgress.NOT_BEGUN
        if never_called
        else (CallProgress(said) if said is not None else None),
    )
