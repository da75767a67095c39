"""Team quotas on PostgreSQL, where they are decided: a team's limits and usage read under its
usage row's lock, and the rate limit's state written back.

The usage counters themselves are kept by triggers (migration 4) on every statement that
changes a job's or a run's state; this module only reads them and the GCRA state, which it
alone writes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime
from typing import TypeAlias

import asyncpg

from duetime_core.jobspec import Priority
from duetime_core.quotas import TeamQuota, TeamState
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.sql import q

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"


def quota_from_row(row: asyncpg.Record) -> TeamQuota:
    return TeamQuota(
        max_stored_jobs=row["max_stored_jobs"],
        runs_per_minute=row["runs_per_minute"],
        rate_burst=row["rate_burst"],
        max_running=row["max_running"],
        max_priority=Priority(row["max_priority"]),
        weight=row["weight"],
    )


# The rate limit's columns keep their names from before schema 22, which older builds still
# read: rate_tat holds TeamState.rate_end (the TAT past every charge, what an older build
# charges after), and rate_gap_tat TeamState.rate_tat (that of the charges due by now).


def state_from_row(row: asyncpg.Record) -> TeamState:
    state = TeamState(
        team_id=row["team_id"],
        quota=quota_from_row(row),
        stored_jobs=row["stored_jobs"],
        in_flight=row["in_flight"],
        held=row["held"],
    )
    ahead = list(zip(row["rate_ahead_at"] or [], row["rate_ahead_n"] or [], strict=True))
    state.restore_rate(
        row["rate_tat"], row["rate_gap_tat"], ahead, chained=row["rate_ahead_from"] is not None
    )
    return state


async def lock_teams(conn: Conn, team_ids: Collection[str]) -> dict[str, TeamState]:
    """The teams' quotas and usage, their usage rows locked until the transaction ends. A
    team without a usage row (unknown) is left out."""
    if not team_ids:
        return {}
    rows = await conn.fetch(q("quota_lock_teams"), sorted(set(team_ids)))
    return {row["team_id"]: state_from_row(row) for row in rows}


async def save_rates(conn: Conn, teams: Iterable[TeamState]) -> None:
    """Writes back the rate limit's state of the teams whose admissions changed it."""
    changed = [t for t in teams if t.dirty]
    if changed:
        await conn.execute(
            q("quota_save_rates"),
            [t.team_id for t in changed],
            [t.rate_end for t in changed],
            [t.rate_tat for t in changed],
            [_array([f'"{at.isoformat()}"' for at, _ in t.rate_ahead]) for t in changed],
            [_array([str(n) for _, n in t.rate_ahead]) for t in changed],
        )
        for team in changed:
            team.dirty = False


def _array(items: list[str]) -> str | None:
    """A PostgreSQL array literal of ``items`` (already quoted where they need it); None
    (NULL) for none."""
    return "{" + ",".join(items) + "}" if items else None


async def teams_holding(conn: Conn) -> list[str]:
    """Teams that have held runs (in any partition)."""
    return [r["team_id"] for r in await conn.fetch(q("quota_teams_holding"))]


async def read_team(conn: Conn | Pool, team_id: str) -> tuple[TeamState, datetime] | None:
    """A team's quota and usage without a lock, and the database clock's now."""
    row = await conn.fetchrow(q("quota_read_team"), team_id)
    if row is None:
        return None
    now: datetime = row["now"]
    return state_from_row(row), now
