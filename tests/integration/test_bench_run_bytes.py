"""bench/run_bytes on the real server: its breakdown adds up to what the week's partitions take,
and a run is kept by the indexes the history readers need and no others."""

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


async def test_a_run_is_in_three_runs_indexes(db_dsn: str) -> None:
    """The primary key, the run key and the team's runs by time hold every run; the partial
    indexes (retries, queued, held, active, waiting, dead letters, ranges) few or none."""
    week = await run_bytes.seed(db_dsn, jobs=4, runs=RUNS)
    conn = await asyncpg.connect(db_dsn)
    try:
        runs_table, _ = run_bytes.week_tables(week)
        every = {
            r["relname"]
            for r in await conn.fetch(
                "SELECT p.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
                "JOIN pg_inherits h ON h.inhrelid = i.oid JOIN pg_class p ON p.oid = h.inhparent "
                "WHERE x.indrelid = $1::regclass AND i.reltuples >= $2",
                runs_table,
                RUNS,
            )
        }
    finally:
        await conn.close()
    assert every == {"runs_pkey", "runs_run_key", "runs_team_time_idx"}


async def test_key_designs_are_filled_as_the_live_indexes_are(db_dsn: str) -> None:
    """The designs as today take what the live partition's indexes take; a key of the scheduled
    runs without their origin, beside one of the others, takes less than today's run key."""
    week = await run_bytes.seed(db_dsn, jobs=4, runs=RUNS)
    conn = await asyncpg.connect(db_dsn)
    try:
        sizes = await run_bytes.key_designs(conn, week)
        live = {
            p.name: p.bytes / RUNS
            for p in await run_bytes.relations(conn, run_bytes.week_tables(week)[0])
        }
    finally:
        await conn.close()
    assert sizes["primary key (run id, time), as today"] == pytest.approx(
        live["runs_pkey"], rel=0.15
    )
    assert sizes["run key (job, time, origin), as today"] == pytest.approx(
        live["runs_run_key"], rel=0.15
    )
    split = (
        sizes["scheduled runs' key (job, time)"] + sizes["the other runs' key (job, time, origin)"]
    )
    assert split < sizes["run key (job, time, origin), as today"]
