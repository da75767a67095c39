"""The partition owner's dispatch of runs waiting in PostgreSQL: held runs released, due
retries queued again, each through admission (``admission.dispatch_runs``).

Each call is one transaction over the partitions whose fencing tokens the caller passes,
ending with ``fence`` (a newer owner's token rolls it all back). Held runs are released per
team in due order, as many as the team's quota lets through now and the scheduler's credit
allows, the credit going to teams in weighted fair order; a held first attempt past its
misfire threshold follows its misfire policy instead (SKIP, or RUN_ONCE with a later
occurrence: MISSED). The caller loops while a call returns ``limit``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TypeAlias

import asyncpg

from duetime_core.attempts import StartView, misfired
from duetime_core.quotas import TeamState
from duetime_core.records import RunReason, RunState
from duetime_core.runkey import SCHEDULE_ORIGIN
from duetime_infra.pg.dispatch.admission import DispatchCredit, RunToDispatch, dispatch_runs
from duetime_infra.pg.dispatch.outbox_writer import insert_outbox
from duetime_infra.pg.dispatch.spec_cache import SpecCache
from duetime_infra.pg.fencing import FencingToken, fence
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.sql import q
from duetime_infra.pg.teams.quotas import lock_teams, teams_holding
from duetime_infra.pg.typed_row import typed_row
from duetime_infra.telemetry import instruments

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"


def _partitions(tokens: Sequence[FencingToken]) -> list[int]:
    return sorted({t.partition for t in tokens})


def _touched(tokens: Sequence[FencingToken], rows: Sequence[RunToDispatch]) -> list[FencingToken]:
    """The tokens of the partitions a batch changed: only those need fencing."""
    partitions = {r.partition for r in rows}
    return [t for t in tokens if t.partition in partitions]


async def requeue_due_retries(
    pool: Pool,
    tokens: Sequence[FencingToken],
    lookahead: timedelta,
    limit: int,
    *,
    credit: DispatchCredit | None = None,
) -> int:
    """RETRY_WAIT runs of the partitions due within ``lookahead``, each queued again with a
    new dispatch row or held by its team's quota; returns how many left RETRY_WAIT.
    StartAttempt still refuses them before their ``next_attempt_time``."""
    partitions = _partitions(tokens)
    if not partitions or limit <= 0:
        return 0
    async with pool.acquire() as conn, conn.transaction():
        due = await conn.fetch(q("retry_requeue_due"), partitions, lookahead, limit)
        if not due:
            return 0
        rows = [typed_row(RunToDispatch, r) for r in due]
        dispatched = await dispatch_runs(
            conn, rows, due[0]["now"], credit=credit, partitions=partitions
        )
        await insert_outbox(conn, dispatched.outbox)
        await fence(conn, _touched(tokens, rows), operation="requeue")
    dispatched.count()
    return len(rows)


def _allowance(team: TeamState, now: datetime, cap: int) -> int:
    """How many of the team's held runs could go now, by its own limits."""
    allowed = min(cap, team.rate_available(now))
    if team.quota.max_running > 0:
        allowed = min(allowed, team.quota.max_running - team.in_flight)
    return max(0, allowed)


async def release_held_runs(
    pool: Pool,
    tokens: Sequence[FencingToken],
    lookahead: timedelta,
    limit: int,
    *,
    credit: DispatchCredit | None = None,
    specs: SpecCache | None = None,
) -> int:
    """Releases held runs of the partitions due within ``lookahead``: queued (or MISSED by
    their misfire policy) in due order per team, in fair order across teams; returns how many
    left WAITING."""
    partitions = _partitions(tokens)
    if not partitions or limit <= 0:
        return 0
    specs = specs or SpecCache(capacity=0)
    async with pool.acquire() as conn, conn.transaction():
        holding = await teams_holding(conn)
        if not holding:
            return 0
        now: datetime = await conn.fetchval(q("db_now"))
        teams = await lock_teams(conn, holding)
        free = await credit.free(conn, partitions, now) if credit is not None else None
        cap = limit if free is None else min(limit, free)
        allowances = {t: _allowance(s, now, cap) for t, s in teams.items()}
        rows, runnable = await _candidates(
            conn, allowances, partitions, now, now + lookahead, specs
        )
        if not rows:
            return 0
        dispatched = await dispatch_runs(conn, runnable, now, credit=credit, partitions=partitions)
        await insert_outbox(conn, dispatched.outbox)
        await fence(conn, _touched(tokens, rows), operation="release")
    dispatched.count()
    if len(runnable) < len(rows):
        instruments.runs_finished(
            RunState.MISSED.value, RunReason.MISFIRE.value, len(rows) - len(runnable)
        )
    return len(rows) - dispatched.held


# Fetches of held runs per release: a run its misfire policy records MISSED takes no quota, so
# the team's allowance is fetched again for what is left.
MAX_FETCHES = 4


async def _candidates(
    conn: Conn,
    allowances: dict[str, int],
    partitions: list[int],
    now: datetime,
    due_by: datetime,
    specs: SpecCache,
) -> tuple[list[RunToDispatch], list[RunToDispatch]]:
    """The held runs fetched (locked) up to each team's allowance, and those of them that may
    run (the others were recorded MISSED), both in due order."""
    fetched: list[RunToDispatch] = []
    runnable: list[RunToDispatch] = []
    for _ in range(MAX_FETCHES):
        wanted = {t: n for t, n in allowances.items() if n > 0}
        if not wanted:
            break
        held = await conn.fetch(
            q("dispatch_held_runs"), list(wanted), list(wanted.values()), partitions, due_by
        )
        if not held:
            break
        held = sorted(held, key=lambda r: r["effective_time"])
        missed = await _apply_misfire(conn, held, now, specs)
        rows = [typed_row(RunToDispatch, r) for r in held]
        fetched += rows
        kept = [r for r in rows if r.run_id not in missed]
        runnable += kept
        for row in kept:
            allowances[row.team_id] -= 1
        if len(kept) == len(rows):
            break
    runnable.sort(key=lambda r: r.effective_time)
    return fetched, runnable


async def _apply_misfire(
    conn: Conn, rows: Sequence[asyncpg.Record], now: datetime, specs: SpecCache
) -> set[uuid.UUID]:
    """Records held first attempts that their misfire policy does not run as MISSED; returns
    their run ids."""
    late = [r for r in rows if r["attempt"] == 0 and r["origin"] == SCHEDULE_ORIGIN]
    if not late:
        return set()
    latest = {
        r["job_id"]: r["latest"]
        for r in await conn.fetch(q("dispatch_latest_scheduled"), list({r["job_id"] for r in late}))
    }
    missed: dict[uuid.UUID, str] = {}
    for row in late:
        spec = specs.get(row["job_id"], row["job_version"], row["spec_text"])
        view = StartView(
            state=RunState.QUEUED,
            scheduled=True,
            nominal_time=row["nominal_time"],
            effective_time=row["effective_time"],
            next_attempt_time=row["next_attempt_time"],
            attempt=0,
            start_delivery_id=None,
            open_attempt_worker=None,
            misfire=spec.misfire,
            overlap=spec.overlap,
        )
        newest: datetime | None = latest.get(row["job_id"])
        detail = misfired(view, now, newest is not None and newest > row["nominal_time"])
        if detail is not None:
            missed[row["run_id"]] = detail
    if not missed:
        return set()
    gone = [r for r in rows if r["run_id"] in missed]
    await conn.execute(
        q("dispatch_missed"),
        [r["run_id"] for r in gone],
        [r["nominal_time"] for r in gone],
        [missed[r["run_id"]] for r in gone],
    )
    return set(missed)
