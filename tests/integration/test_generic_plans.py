"""Batch statements run their generic plan inside a transaction that asks for it, and only
there: PostgreSQL's own plan counters of the prepared statement say which plan ran."""

from __future__ import annotations

import uuid

import asyncpg

from duetime_infra.pg.pool import generic_plans
from duetime_infra.pg.sql import q


async def _plans(conn: asyncpg.Connection, statement: str) -> tuple[int, int]:
    row = await conn.fetchrow(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1",
        statement,
    )
    assert row is not None
    return row["generic_plans"], row["custom_plans"]


async def test_a_batch_transaction_runs_generic_plans_and_the_session_keeps_custom_ones(
    db_dsn: str,
) -> None:
    conn = await asyncpg.connect(db_dsn)
    try:
        statement = q("attempt_batch_reports_lock")
        run_ids = [uuid.uuid4() for _ in range(500)]
        for _ in range(3):
            async with conn.transaction():
                await generic_plans(conn)
                assert await conn.fetch(statement, run_ids, run_ids) == []
        assert await _plans(conn, statement) == (3, 0)
        assert await conn.fetchval("SHOW plan_cache_mode") == "auto"
        async with conn.transaction():
            await conn.fetch(statement, run_ids, run_ids)
        assert await _plans(conn, statement) == (3, 1)
    finally:
        await conn.close()
