"""The claim-and-advance transaction: due jobs become runs, outbox rows and a new next time.

One transaction per batch: lock the due jobs (SKIP LOCKED), read the calendars they exclude
(one statement for the batch, none when no job names one), plan their runs, admit the queued
ones to dispatch (their teams' quotas and the scheduler's dispatch credit: ``admission``),
insert the runs (ON CONFLICT DO NOTHING on the run key), advance each job, write an outbox row
for every run actually inserted and admitted, and fence the partitions last. A run not
admitted is inserted WAITING (QUOTA or FAIR_SHARE) and released later. A crash before COMMIT
changes nothing; after it the runs and their outbox rows exist together.

Each queued run's trace starts here, with a "claim run" span whose context is the traceparent
stored on the run and its outbox row; the span is ended (and so exported) only once the run was
inserted and the batch committed.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NamedTuple

from opentelemetry.trace import Span

from duetime_core.calendars import CalendarRules, job_calendars
from duetime_core.claim_plan import ClaimPlan, PlannedRun, plan_claim
from duetime_core.jobspec import JobSpec, JobState, Priority
from duetime_core.planning import Occurrence
from duetime_core.quotas import Candidate
from duetime_core.records import RunReason, RunState
from duetime_core.runkey import RunKey, new_run_id
from duetime_infra.dispatch import OutboxRow, dispatch_row
from duetime_infra.pg.dispatch.admission import DispatchCredit, admit_runs, hold_detail
from duetime_infra.pg.dispatch.outbox_writer import insert_outbox
from duetime_infra.pg.dispatch.spec_cache import SpecCache
from duetime_infra.pg.fencing import FencingToken, fence
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.sql import q
from duetime_infra.pg.teams.calendars import calendars_of
from duetime_infra.pg.teams.quotas import save_rates
from duetime_infra.pg.typed_row import typed_row
from duetime_infra.telemetry import instruments
from duetime_infra.tracecontext import JOB_ID, RUN_ID, start_run_span, stored_trace

log = logging.getLogger(__name__)


class ClaimAbandoned(Exception):
    """The partition lease may have lapsed before COMMIT; the batch was rolled back."""


@dataclass(frozen=True)
class ClaimResult:
    jobs: int
    runs: int
    queued: int
    # A full batch: more due jobs may be waiting.
    full: bool
    # The runs inserted, counted by the whole second (Unix time) of their effective time.
    due_seconds: Mapping[int, int] = field(default_factory=dict)


class DueJob(NamedTuple):
    """A job the claim locked (``claim_due_jobs``, ``claim_jobs_ahead``): its pending
    occurrence, the runs its schedule made so far, and its definition's text."""

    job_id: uuid.UUID
    team_id: str
    partition: int
    version: int
    spec_text: str
    next_run_time: datetime
    next_effective_time: datetime
    scheduled_runs: int


@dataclass
class NewRun:
    """A run the claim will insert: one row of ``claim_insert_runs``."""

    run_id: uuid.UUID
    job_id: uuid.UUID
    team_id: str
    partition: int
    nominal_time: datetime
    effective_time: datetime
    state: RunState
    reason: RunReason
    attempt_limit: int
    range_end_time: datetime | None
    occurrence_count: int
    traceparent: str
    job_version: int
    priority: Priority
    token: FencingToken
    spec: JobSpec
    quota_limit: str = ""
    reason_detail: str = ""


@dataclass(frozen=True)
class Advance:
    """A job's new next occurrence and state, and the runs its schedule made: one row of
    ``claim_advance_jobs``."""

    job_id: uuid.UUID
    next_run_time: datetime | None
    next_effective_time: datetime | None
    state: JobState
    state_reason: str
    made: int = 0
    last_made: datetime | None = None


@dataclass
class _Batch:
    runs: list[NewRun] = field(default_factory=list)
    advances: list[Advance] = field(default_factory=list)
    # The "claim run" span of each queued run, ended if the run is inserted.
    spans: dict[uuid.UUID, Span] = field(default_factory=dict)
    # When the claim began (ns since the epoch), the start of every run's span.
    started: int = field(default_factory=time.time_ns)


Calendars = Mapping[tuple[str, str], CalendarRules]


# A job's definition as the batch decoded it, or why it could not be read.
Decoded = JobSpec | Exception


def _decode(rows: Sequence[DueJob], specs: SpecCache) -> dict[uuid.UUID, Decoded]:
    """Each job's definition, decoded once a batch (through the cache); one that cannot be
    read is kept as its error, for ``_plan_job`` to send the job to ERROR."""
    decoded: dict[uuid.UUID, Decoded] = {}
    for row in rows:
        try:
            decoded[row.job_id] = specs.get(row.job_id, row.version, row.spec_text)
        except Exception as failure:
            decoded[row.job_id] = failure
    return decoded


async def _batch_calendars(
    conn: Conn, rows: Sequence[DueJob], decoded: Mapping[uuid.UUID, Decoded]
) -> Calendars:
    """The calendars the batch's jobs exclude, by (team, id), in one statement; no statement
    when none names one."""
    wanted: set[tuple[str, str]] = set()
    for row in rows:
        spec = decoded[row.job_id]
        if isinstance(spec, JobSpec):
            wanted.update((row.team_id, name) for name in spec.excluded_calendars)
    return await calendars_of(conn, wanted)


def _job_calendars(
    team_id: str, spec: JobSpec, calendars: Calendars
) -> tuple[tuple[str, CalendarRules], ...]:
    if not spec.excluded_calendars:
        return ()
    known = {
        name: calendars[team_id, name]
        for name in spec.excluded_calendars
        if (team_id, name) in calendars
    }
    return job_calendars(spec.excluded_calendars, known)


def _plan_job(
    row: DueJob,
    decoded: Decoded,
    token: FencingToken,
    now: datetime,
    lookahead: timedelta,
    batch: _Batch,
    calendars: Calendars,
) -> None:
    """Plans the job's runs due within ``lookahead``, or its pending one alone when a grown
    look-ahead reached it from further away (a herd claimed early claims no more than that)."""
    job_id = row.job_id
    try:
        if isinstance(decoded, Exception):
            raise decoded
        spec = decoded
        pending = Occurrence(row.next_run_time, row.next_effective_time)
        reach = max(lookahead, pending.effective_time - now)
        plan: ClaimPlan = plan_claim(
            job_id,
            spec,
            pending,
            now,
            reach,
            row.scheduled_runs,
            _job_calendars(row.team_id, spec, calendars),
        )
    except Exception as failure:
        # Whatever makes one job unplannable (a zone tzdata no longer has, a document this
        # build cannot read) sends that job to ERROR; it never fails the batch for the others.
        log.warning("job cannot be planned", extra={"action": "job_errored", "job_id": str(job_id)})
        batch.advances.append(
            Advance(job_id, None, None, JobState.ERROR, f"cannot plan: {failure}")
        )
        return
    for planned in plan.runs:
        batch.runs.append(_new_run(row, spec, planned, token, batch))
    nxt, made = plan.next, plan.made
    batch.advances.append(
        Advance(
            job_id,
            nxt.nominal_time if nxt else None,
            nxt.effective_time if nxt else None,
            plan.state,
            plan.state_reason,
            len(made),
            made[-1].nominal_time if made else None,
        )
    )


def _new_run(
    row: DueJob,
    spec: JobSpec,
    planned: PlannedRun,
    token: FencingToken,
    batch: _Batch,
) -> NewRun:
    """The row of one planned run of the job in ``row``; a QUEUED run's trace begins here, in
    a "claim run" span kept in ``batch`` (ended once the run is inserted)."""
    run_id = new_run_id()
    job_id = row.job_id
    traceparent = ""
    if planned.state is RunState.QUEUED:
        trace, span = start_run_span("claim run", run_id, start_time=batch.started)
        traceparent = trace.traceparent
        if span.is_recording():
            span.set_attributes({RUN_ID: str(run_id), JOB_ID: str(job_id)})
        batch.spans[run_id] = span
    return NewRun(
        run_id=run_id,
        job_id=job_id,
        team_id=row.team_id,
        partition=row.partition,
        nominal_time=planned.nominal_time,
        effective_time=planned.effective_time,
        state=planned.state,
        reason=planned.reason,
        attempt_limit=spec.retry.max_attempts,
        range_end_time=planned.range_end_time,
        occurrence_count=planned.occurrence_count,
        traceparent=traceparent,
        job_version=row.version,
        priority=Priority.LOW if planned.catch_up else spec.priority,
        token=token,
        spec=spec,
        reason_detail=planned.detail,
    )


async def due_by_second(
    conn: Conn, partitions: list[int], horizon: timedelta
) -> tuple[datetime, list[tuple[int, int]]]:
    """The database's now, and the jobs of ``partitions`` due within ``horizon`` of it, counted
    per whole second (``claim_due_by_second``)."""
    now: datetime = await conn.fetchval(q("claim_now"))
    rows = await conn.fetch(q("claim_due_by_second"), partitions, now, horizon)
    return now, [(r["second"], r["jobs"]) for r in rows]


async def _insert_runs(
    conn: Conn, runs: list[NewRun], claimed_by: str, token_ids: Mapping[int, int]
) -> set[uuid.UUID]:
    traces = [stored_trace(r.traceparent, r.run_id) for r in runs]
    inserted = await conn.fetch(
        q("claim_insert_runs"),
        [r.run_id for r in runs],
        [r.job_id for r in runs],
        [r.team_id for r in runs],
        [r.partition for r in runs],
        [r.nominal_time for r in runs],
        [r.effective_time for r in runs],
        [r.state.value for r in runs],
        [r.reason.value for r in runs],
        [r.attempt_limit for r in runs],
        [r.range_end_time for r in runs],
        [r.occurrence_count for r in runs],
        [text for _, text in traces],
        [r.job_version for r in runs],
        [r.priority.value for r in runs],
        claimed_by,
        [r.token.epoch for r in runs],
        [r.token.revision for r in runs],
        [r.quota_limit for r in runs],
        [r.reason_detail for r in runs],
        [stored for stored, _ in traces],
        [token_ids.get(r.partition) for r in runs],
    )
    return {r["run_id"] for r in inserted}


async def _advance_jobs(conn: Conn, advances: list[Advance]) -> None:
    await conn.execute(
        q("claim_advance_jobs"),
        [a.job_id for a in advances],
        [a.next_run_time for a in advances],
        [a.next_effective_time for a in advances],
        [a.state.value for a in advances],
        [a.state_reason for a in advances],
        [a.made for a in advances],
        [a.last_made for a in advances],
    )


async def claim_batch(
    conn: Conn,
    tokens: Mapping[int, FencingToken],
    *,
    lookahead: timedelta,
    batch_size: int,
    still_owner: Callable[[], bool],
    claimed_by: str = "",
    token_ids: Mapping[int, int] | None = None,
    specs: SpecCache | None = None,
    credit: DispatchCredit | None = None,
    ahead: timedelta | None = None,
) -> ClaimResult:
    """Claims up to ``batch_size`` due jobs of the partitions in ``tokens``, in one transaction.
    ``credit`` is the scheduler's dispatch credit (None: no bound; quotas still apply).
    ``ahead``: a look-ahead grown past ``lookahead`` for a herd (``duetime_core.lookahead``):
    jobs due within it are claimed too, each for its pending run alone. ``token_ids``: the ids
    of the tokens ``claimed_by`` recorded (``record_tokens``), its runs' claim proof."""
    if not tokens:
        return ClaimResult(0, 0, 0, False)
    specs = specs or SpecCache(capacity=0)
    async with conn.transaction():
        now: datetime = await conn.fetchval(q("claim_now"))
        rows = await _due_jobs(conn, list(tokens), now, lookahead, ahead, batch_size)
        if not rows:
            return ClaimResult(0, 0, 0, False)
        batch = _Batch()
        decoded = _decode(rows, specs)
        calendars = await _batch_calendars(conn, rows, decoded)
        for row in rows:
            job = decoded[row.job_id]
            _plan_job(row, job, tokens[row.partition], now, lookahead, batch, calendars)
        weights = await _admit(conn, batch.runs, now, credit, list(tokens))
        inserted_ids = await _insert_runs(conn, batch.runs, claimed_by, token_ids or {})
        await _advance_jobs(conn, batch.advances)
        outbox = _dispatches(batch.runs, inserted_ids, now, weights)
        await insert_outbox(conn, outbox)
        await fence(conn, (tokens[p] for p in {r.partition for r in rows}))
        if not still_owner():
            # Rolling back is always safe; committing after the lease may have lapsed is not.
            instruments.fencing_refused("claim", "lease")
            raise ClaimAbandoned("partition lease not safely held at commit time")
    # Committed: the inserted runs exist, and so do their traces.
    for run_id, span in batch.spans.items():
        if run_id in inserted_ids:
            span.end()
    if len(outbox) < len(inserted_ids):
        _count_records(batch.runs, inserted_ids)
    due = Counter(int(r.effective_time.timestamp()) for r in batch.runs if r.run_id in inserted_ids)
    return ClaimResult(len(rows), len(inserted_ids), len(outbox), len(rows) == batch_size, due)


async def _due_jobs(
    conn: Conn,
    partitions: list[int],
    now: datetime,
    lookahead: timedelta,
    ahead: timedelta | None,
    batch_size: int,
) -> list[DueJob]:
    """The batch's jobs: those due within the base ``lookahead`` first, then, in the room
    left, those only a look-ahead grown to ``ahead`` reaches."""
    rows = list(await conn.fetch(q("claim_due_jobs"), partitions, now + lookahead, batch_size))
    if ahead is not None and ahead > lookahead and len(rows) < batch_size:
        rows += await conn.fetch(
            q("claim_jobs_ahead"),
            partitions,
            now + lookahead,
            now + ahead,
            batch_size - len(rows),
        )
    return [typed_row(DueJob, r) for r in rows]


def _dispatches(
    runs: list[NewRun], inserted: set[uuid.UUID], now: datetime, weights: Mapping[str, int]
) -> list[OutboxRow]:
    """The outbox rows of the runs inserted QUEUED (a run another pass inserted first is not
    dispatched again)."""
    return [
        dispatch_row(
            run_id=run.run_id,
            key=RunKey.scheduled(run.job_id, run.nominal_time),
            team_id=run.team_id,
            effective_time=run.effective_time,
            priority=run.priority,
            traceparent=run.traceparent,
            now=now,
            target=run.spec.target,
            team_weight=weights.get(run.team_id, 1),
            overlap=run.spec.overlap,
        )
        for run in runs
        if run.state is RunState.QUEUED and run.run_id in inserted
    ]


async def _admit(
    conn: Conn,
    runs: list[NewRun],
    now: datetime,
    credit: DispatchCredit | None,
    partitions: list[int],
) -> dict[str, int]:
    """Admits the batch's queued runs to dispatch, in due order; those held become WAITING
    (their outbox row is not written). Returns the teams' dispatch weights."""
    queued = sorted(
        (i for i, run in enumerate(runs) if run.state is RunState.QUEUED),
        key=lambda i: runs[i].effective_time,
    )
    if not queued:
        return {}
    admitted = await admit_runs(
        conn,
        [Candidate(i, runs[i].team_id, runs[i].priority, runs[i].effective_time) for i in queued],
        now,
        credit=credit,
        partitions=partitions,
    )
    for i in queued:
        decision = admitted.decisions[i]
        if not decision.dispatched:
            runs[i] = dataclasses.replace(
                runs[i],
                state=RunState.WAITING,
                reason=decision.reason,
                quota_limit=decision.limit.value,
                reason_detail=hold_detail(decision),
            )
    await save_rates(conn, admitted.teams.values())
    return {team_id: state.quota.weight for team_id, state in admitted.teams.items()}


def _count_records(runs: list[NewRun], inserted: set[uuid.UUID]) -> None:
    """After COMMIT: the runs a claim inserted already final (MISSED, SKIPPED records), and
    those held back (WAITING)."""
    counts: Counter[tuple[str, str]] = Counter(
        (run.state.value, run.reason.value)
        for run in runs
        if run.run_id in inserted and run.state is not RunState.QUEUED
    )
    for (state, reason), count in counts.items():
        if state == RunState.WAITING.value:
            instruments.runs_held(reason, count)
        else:
            instruments.runs_finished(state, reason, count)
