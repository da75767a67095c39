"""Moving the database clock under running schedulers, and reading back what they claimed.

``duetime_now()`` is statement time plus the offset in ``duetime_clock``: setting the offset
moves "now" for every process at once. These helpers put the clock at an absolute instant (the
offset is computed against the server's own statement time, in one statement), wait for the
fleet to claim everything due, and read runs back in a form a test can compare with lists
written by hand.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeAlias

import asyncpg

from duetime_infra.pg.pool import Conn
from testkit.fleet import owners
from testkit.polling import eventually

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"


def utc(text: str) -> datetime:
    """``"2026-03-08T07:00"`` (or with seconds) as an aware UTC instant."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def every(first: datetime, last: datetime, step: timedelta) -> list[datetime]:
    """``first, first + step, ...`` up to and including ``last``: plain arithmetic on UTC
    instants, independent of the schedule code under test."""
    found: list[datetime] = []
    moment = first
    while moment <= last:
        found.append(moment)
        moment += step
    return found


async def db_now(pool: Pool) -> datetime:
    value: datetime = await pool.fetchval("SELECT duetime_now()")
    return value


async def set_clock(pool: Pool, at: datetime) -> None:
    """Puts the database clock at ``at`` (it keeps running from there, in real time)."""
    await pool.execute(
        """UPDATE duetime_clock SET "offset" = $1::timestamptz - statement_timestamp()""", at
    )


async def nothing_due(pool: Pool) -> bool:
    """No ACTIVE job is waiting for a claim: every next effective time is in the future."""
    due = await pool.fetchval(
        "SELECT count(*) FROM jobs WHERE state = 'ACTIVE' AND next_effective_time <= duetime_now()"
    )
    return int(due) == 0


async def all_partitions_owned(prefix: str, ids: Iterable[str]) -> bool:
    held = await owners(prefix)
    return len(held) == 1024 and {owner for owner, _ in held.values()} == set(ids)


async def history_ready(pool: Pool) -> bool:
    """The week of the database clock has its own runs partition: the scheduler that owns
    partition 0 ran its history maintenance (it does so on its first pass, then hourly) since
    the clock was last put in a week it had not created. Tests wait for this before moving the
    clock, so no run lands in ``runs_default`` and is moved while they read it."""
    ready = await pool.fetchval(
        "SELECT to_regclass(format('runs_%s', "
        "to_char(date_trunc('week', duetime_now() AT TIME ZONE 'UTC'), 'YYYYMMDD'))) IS NOT NULL"
    )
    return bool(ready)


async def fleet_ready(pool: Pool, prefix: str, ids: Iterable[str]) -> bool:
    """Every partition is owned by exactly the schedulers ``ids`` and history is ready."""
    return await all_partitions_owned(prefix, ids) and await history_ready(pool)


async def advance_through(
    pool: Pool, stops: Sequence[datetime], within: float = 20, what: str = ""
) -> None:
    """Moves the clock to each of ``stops`` in turn, each time waiting until the running
    schedulers have claimed everything that came due."""
    for stop in stops:
        await set_clock(pool, stop)
        await eventually(
            lambda: nothing_due(pool), within, f"{what} claims caught up at {stop.isoformat()}"
        )


async def all_next_after(pool: Pool, moment: datetime) -> bool:
    """Every ACTIVE job's next occurrence is after ``moment``: claimed through it."""
    behind = await pool.fetchval(
        "SELECT count(*) FROM jobs WHERE state = 'ACTIVE' AND next_run_time <= $1", moment
    )
    return int(behind) == 0


@dataclass(frozen=True)
class RunRow:
    nominal_time: datetime
    effective_time: datetime
    state: str
    reason: str
    occurrence_count: int
    range_end_time: datetime | None
    priority: str
    create_time: datetime


async def runs_of(pool: Pool, job_id: object) -> list[RunRow]:
    """A job's scheduled runs (ranges as one row each), by nominal time."""
    rows = await pool.fetch(
        "SELECT nominal_time, effective_time, state, reason, occurrence_count, range_end_time, "
        "priority, create_time FROM runs WHERE job_id = $1 AND origin = 'SCHEDULE' "
        "ORDER BY nominal_time",
        job_id,
    )
    return [
        RunRow(
            r["nominal_time"],
            r["effective_time"],
            r["state"],
            r["reason"],
            r["occurrence_count"],
            r["range_end_time"],
            r["priority"],
            r["create_time"],
        )
        for r in rows
    ]


async def assert_no_duplicate_runs(conn: Conn) -> None:
    """No two runs share (job, nominal time), whatever their origin or state."""
    duplicates = await conn.fetch(
        "SELECT job_id, nominal_time, count(*) AS n FROM runs "
        "GROUP BY job_id, nominal_time HAVING count(*) > 1"
    )
    assert not duplicates, [dict(d) for d in duplicates]


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value
