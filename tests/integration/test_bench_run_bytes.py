"""bench/run_bytes on the real server: its breakdown adds up to what the week's partitions
take."""

from __future__ import annotations

import asyncpg
import pytest

from bench import run_bytes

pytestmark = pytest.mark.timeout(60)

RUNS = 4000


async def test_breakdown_adds_up_to_the_partitions(db_dsn: str) -> None:
    week = await run_bytes.seed(db_dsn, jobs=4, runs=RUNS)
    conn = await asyncpg.connect(db_dsn)
    try:
        total = await run_bytes.postgres_bytes(conn, week, detail=True)
        whole = await conn.fetchval(
            "SELECT pg_total_relation_size($1::regclass) + pg_total_relation_size($2::regclass)",
            *run_bytes.week_tables(week),
        )
        assert total == pytest.approx(whole / RUNS)
    finally:
        await conn.close()
