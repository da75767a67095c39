"""The claim-and-advance transaction: due jobs become runs, outbox rows and a new next time.

One transaction per batch: lock the due jobs (SKIP LOCKED), insert their runs (ON CONFLICT DO
NOTHING on the run key), advance each job, write an outbox row for every queued run actually
inserted, and fence the partitions last. A crash before COMMIT changes nothing; after it the
runs and their outbox rows exist together.

Each queued run's trace starts here, with a "claim run" span whose context is the traceparent
stored on the run and its outbox row; the span is ended (and so exported) only once the run was
inserted and the batch committed.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

import asyncpg
from opentelemetry.trace import Span

from duetime_core.jobspec import JobSpec, JobState, Priority
from duetime_core.misfire import ClaimPlan, plan_claim
from duetime_core.planning import Occurrence
from duetime_core.records import RunState
from duetime_core.runkey import RunKey
from duetime_infra.codec.spec_json import spec_from_json
from duetime_infra.dispatch import OutboxRow, dispatch_row
from duetime_infra.pg.fencing import FencingToken, fence
from duetime_infra.pg.outbox_writer import insert_outbox
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.sql import q
from duetime_infra.telemetry import instruments
from duetime_infra.tracecontext import JOB_ID, RUN_ID, start_run_span

log = logging.getLogger(__name__)


class ClaimAbandoned(Exception):
    """The partition lease may have lapsed before COMMIT; the batch was rolled back."""


class SpecCache:
    """Decoded job definitions by (job id, version), most recently used kept.

    A recurring job is claimed every period with the same version, so its stored document need
    not be parsed and validated each time; versions are immutable, so an entry never goes stale.
    """

    def __init__(self, capacity: int = 50_000) -> None:
        self._capacity = capacity
        self._specs: OrderedDict[tuple[uuid.UUID, int], JobSpec] = OrderedDict()

    def get(self, job_id: uuid.UUID, version: int, document: str) -> JobSpec:
        key = (job_id, version)
        spec = self._specs.get(key)
        if spec is not None:
            self._specs.move_to_end(key)
            return spec
        spec = spec_from_json(json.loads(document))
        self._specs[key] = spec
        if len(self._specs) > self._capacity:
            self._specs.popitem(last=False)
        return spec


@dataclass(frozen=True)
class ClaimResult:
    jobs: int
    runs: int
    queued: int
    # A full batch: more due jobs may be waiting.
    full: bool


@dataclass
class _Batch:
    runs: list[tuple[object, ...]]
    queued: dict[uuid.UUID, OutboxRow]
    advances: list[tuple[object, ...]]
    # The "claim run" span of each queued run, ended if the run is inserted.
    spans: dict[uuid.UUID, Span]
    # When the claim began (ns since the epoch), the start of every run's span.
    started: int


def _plan_job(
    row: asyncpg.Record,
    specs: SpecCache,
    token: FencingToken,
    now: datetime,
    lookahead: timedelta,
    batch: _Batch,
) -> None:
    job_id: uuid.UUID = row["job_id"]
    try:
        spec = specs.get(job_id, row["version"], row["spec_text"])
        pending = Occurrence(row["next_run_time"], row["next_effective_time"])
        plan: ClaimPlan = plan_claim(job_id, spec, pending, now, lookahead)
    except Exception as failure:
        # Whatever makes one job unplannable (a zone tzdata no longer has, a document this
        # build cannot read) sends that job to ERROR; it never fails the batch for the others.
        log.warning("job cannot be planned", extra={"action": "job_errored", "job_id": str(job_id)})
        batch.advances.append((job_id, None, None, JobState.ERROR.value, f"cannot plan: {failure}"))
        return
    for planned in plan.runs:
        run_id = uuid.uuid4()
        priority = Priority.LOW if planned.catch_up else spec.priority
        trace_id, traceparent = "", ""
        if planned.state is RunState.QUEUED:
            trace, span = start_run_span("claim run", start_time=batch.started)
            trace_id, traceparent = trace.trace_id, trace.traceparent
            if span.is_recording():
                span.set_attributes({RUN_ID: str(run_id), JOB_ID: str(job_id)})
            batch.spans[run_id] = span
            batch.queued[run_id] = dispatch_row(
                run_id=run_id,
                key=RunKey.scheduled(job_id, planned.nominal_time),
                team_id=row["team_id"],
                effective_time=planned.effective_time,
                priority=priority,
                traceparent=traceparent,
                now=now,
                target=spec.target,
            )
        batch.runs.append(
            (
                run_id,
                job_id,
                row["team_id"],
                row["partition"],
                planned.nominal_time,
                planned.effective_time,
                planned.state.value,
                planned.reason.value,
                spec.retry.max_attempts,
                planned.range_end_time,
                planned.occurrence_count,
                trace_id,
                traceparent,
                row["version"],
                priority.value,
                token.epoch,
                token.revision,
            )
        )
    nxt = plan.next
    batch.advances.append(
        (
            job_id,
            nxt.nominal_time if nxt else None,
            nxt.effective_time if nxt else None,
            plan.state.value,
            plan.state_reason,
        )
    )


def _columns(rows: list[tuple[object, ...]], width: int) -> list[list[object]]:
    return [[r[i] for r in rows] for i in range(width)] if rows else [[] for _ in range(width)]


async def claim_batch(
    conn: Conn,
    tokens: Mapping[int, FencingToken],
    *,
    lookahead: timedelta,
    batch_size: int,
    still_owner: Callable[[], bool],
    claimed_by: str = "",
    specs: SpecCache | None = None,
) -> ClaimResult:
    """Claims up to ``batch_size`` due jobs of the partitions in ``tokens``, in one transaction."""
    if not tokens:
        return ClaimResult(0, 0, 0, False)
    specs = specs or SpecCache(capacity=0)
    async with conn.transaction():
        now: datetime = await conn.fetchval(q("claim_now"))
        rows = await conn.fetch(q("claim_due_jobs"), list(tokens), now + lookahead, batch_size)
        if not rows:
            return ClaimResult(0, 0, 0, False)
        batch = _Batch([], {}, [], {}, time.time_ns())
        for row in rows:
            _plan_job(row, specs, tokens[row["partition"]], now, lookahead, batch)
        columns = _columns(batch.runs, 17)
        inserted = await conn.fetch(
            q("claim_insert_runs"), *columns[:15], claimed_by, *columns[15:]
        )
        inserted_ids = {r["run_id"] for r in inserted}
        await conn.execute(q("claim_advance_jobs"), *_columns(batch.advances, 5))
        outbox = [row for run_id, row in batch.queued.items() if run_id in inserted_ids]
        await insert_outbox(conn, outbox)
        await fence(conn, (tokens[p] for p in {r["partition"] for r in rows}))
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
    return ClaimResult(len(rows), len(inserted_ids), len(outbox), len(rows) == batch_size)


def _count_records(runs: list[tuple[object, ...]], inserted: set[uuid.UUID]) -> None:
    """After COMMIT: the runs a claim inserted already final (MISSED, SKIPPED records)."""
    counts: Counter[tuple[str, str]] = Counter(
        (str(run[6]), str(run[7]))
        for run in runs
        if run[0] in inserted and run[6] != RunState.QUEUED.value
    )
    for (state, reason), count in counts.items():
        instruments.runs_finished(state, reason, count)
