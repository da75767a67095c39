"""A backfill's runs on PostgreSQL: which occurrences ran, and the runs made in one statement.

Every run passes through ``admit_runs``, as a trigger does: those the team's quota lets go now
are QUEUED with their dispatch rows, the rest are WAITING (QUOTA) and the scheduler's release
of held runs lets them go at the quota's pace, oldest occurrence first (their effective times
are the request's time, one microsecond apart in nominal order). Under ONE_AT_A_TIME only the
first is admitted; the others wait (BACKFILL_TURN) for ``next_turns``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from duetime_core.backfill import BackfillPlan
from duetime_core.quotas import Admission, Candidate
from duetime_core.records import JobRecord, RunReason, RunState
from duetime_core.runkey import RunKey, new_run_id
from duetime_infra.dispatch import OutboxRow, dispatch_row
from duetime_infra.pg.dispatch.admission import admit_runs, hold_detail
from duetime_infra.pg.dispatch.outbox_writer import insert_outbox
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.sql import q
from duetime_infra.pg.teams.quotas import save_rates
from duetime_infra.tracecontext import RunTrace, new_run_trace, stored_trace

_STEP = timedelta(microseconds=1)
TURN_DETAIL = "waiting for the backfill's previous run to end (ONE_AT_A_TIME)"
_TURN = Admission(RunReason.BACKFILL_TURN)


@dataclass(frozen=True)
class _Run:
    run_id: uuid.UUID
    key: RunKey
    effective_time: datetime
    admission: Admission


async def ran_at(conn: Conn, job_id: uuid.UUID, times: Sequence[datetime]) -> set[datetime]:
    """The nominal times among ``times`` that have a run that succeeded or is active."""
    rows = await conn.fetch(q("backfill_ran"), job_id, list(times))
    return {r["nominal_time"] for r in rows}


async def made_by(
    conn: Conn, job_id: uuid.UUID, origin: str, times: Sequence[datetime]
) -> set[datetime]:
    """The nominal times among ``times`` that the backfill of ``origin`` made runs for."""
    rows = await conn.fetch(q("backfill_made"), job_id, origin, list(times))
    return {r["nominal_time"] for r in rows}


async def insert_backfill(
    conn: Conn,
    job: JobRecord,
    origin: str,
    plan: BackfillPlan,
    now: datetime,
    *,
    one_at_a_time: bool,
) -> int:
    """Makes the plan's runs (under the job's row lock), admitted to dispatch as described
    above, and its records of the occurrences a calendar excluded (SKIPPED, CALENDAR); returns
    how many runs were made."""
    if not plan.runs and not plan.excluded:
        return 0
    count = 1 if one_at_a_time and plan.runs else len(plan.runs)
    candidates = [Candidate(i, job.team_id, job.spec.priority) for i in range(count)]
    admitted = await admit_runs(conn, candidates, now)
    runs = [
        _Run(
            new_run_id(),
            RunKey(job.job_id, nominal, origin),
            now + i * _STEP,
            admitted.decisions.get(i, _TURN),
        )
        for i, nominal in enumerate(plan.runs)
    ]
    traces = [new_run_trace(run.run_id) for run in runs]
    rows = [_made_row(run, trace) for run, trace in zip(runs, traces, strict=True)]
    skipped = [
        _Row(new_run_id(), t, t, RunState.SKIPPED, RunReason.CALENDAR, by)
        for t, by in plan.excluded
    ]
    made = await conn.fetch(
        q("backfill_insert"),
        job.job_id,
        job.team_id,
        job.partition,
        origin,
        job.spec.retry.max_attempts,
        job.version,
        job.spec.priority.value,
        *_columns([*rows, *skipped]),
    )
    inserted = {row["run_id"] for row in made} - {row.run_id for row in skipped}
    weight = admitted.weight(job.team_id)
    outbox = [
        _dispatch(job, run, trace.traceparent, now, weight)
        for run, trace in zip(runs, traces, strict=True)
        if run.admission.dispatched and run.run_id in inserted
    ]
    await insert_outbox(conn, outbox)
    await save_rates(conn, admitted.teams.values())
    return len(inserted)


@dataclass(frozen=True)
class _Row:
    """One row of ``backfill_insert``: a run, or the record of an occurrence not run."""

    run_id: uuid.UUID
    nominal_time: datetime
    effective_time: datetime
    state: RunState
    reason: RunReason
    detail: str = ""
    traceparent: str = ""
    quota_limit: str = ""


def _made_row(run: _Run, trace: RunTrace) -> _Row:
    dispatched = run.admission.dispatched
    return _Row(
        run.run_id,
        run.key.nominal_time,
        run.effective_time,
        RunState.QUEUED if dispatched else RunState.WAITING,
        run.admission.reason,
        _detail(run.admission),
        trace.traceparent,
        run.admission.limit.value,
    )


def _columns(rows: list[_Row]) -> list[list[object]]:
    """``backfill_insert``'s arrays ($8 to $16), a column each."""
    traces = [stored_trace(r.traceparent, r.run_id) for r in rows]
    return [
        [r.run_id for r in rows],
        [r.nominal_time for r in rows],
        [r.effective_time for r in rows],
        [r.state.value for r in rows],
        [r.reason.value for r in rows],
        [r.detail for r in rows],
        [text for _, text in traces],
        [r.quota_limit for r in rows],
        [stored for stored, _ in traces],
    ]


def _detail(admission: Admission) -> str:
    if admission.dispatched:
        return ""
    if admission.reason is RunReason.BACKFILL_TURN:
        return TURN_DETAIL
    return hold_detail(admission)


def _dispatch(job: JobRecord, run: _Run, traceparent: str, now: datetime, weight: int) -> OutboxRow:
    return dispatch_row(
        run_id=run.run_id,
        key=run.key,
        team_id=job.team_id,
        effective_time=run.effective_time,
        priority=job.spec.priority,
        traceparent=traceparent,
        now=now,
        target=job.spec.target,
        team_weight=weight,
        overlap=job.spec.overlap,
    )
