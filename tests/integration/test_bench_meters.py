"""The benches' meters on the real server: PostgreSQL's CPU counts backends that came and went
between two readings, and the statement sampler sees what runs."""

from __future__ import annotations

import asyncpg
import pytest

from bench.harness import QuerySampler, cpu_seconds, postgres_cpu
from testkit.databases import admin_dsn
from testkit.polling import eventually

pytestmark = pytest.mark.timeout(60)

BURN = "SELECT count(*) FROM generate_series(1, 3000000)"


async def test_postgres_cpu_counts_backends_that_exited() -> None:
    dsn = admin_dsn()
    server = await postgres_cpu(dsn)
    before = server()
    burned = 0.0
    for _ in range(3):  # each its own backend, gone before the next reading
        conn = await asyncpg.connect(dsn)
        try:
            await conn.fetchval(BURN)
            pid = await conn.fetchval("SELECT pg_backend_pid()")
            burned += cpu_seconds(pid)
        finally:
            await conn.close()
    assert burned > 0.1
    # Exited backends are reaped into the postmaster's children's time shortly after.
    await eventually(lambda: server() - before >= burned * 0.9, 5, "backend CPU reaped")


async def test_backends_of_a_database_are_its_own() -> None:
    dsn = admin_dsn()
    server = await postgres_cpu(dsn)
    conn = await asyncpg.connect(dsn)
    try:
        database = await conn.fetchval("SELECT current_database()")
        own = server.backends_of(database)
        other = server.backends_of("duetime_no_such_database")
        before, before_other = own(), other()
        await conn.fetchval(BURN)
        assert own() - before > 0.05
        assert other() == before_other == 0.0
    finally:
        await conn.close()


async def test_sampler_sees_the_running_statement() -> None:
    dsn = admin_dsn()
    conn = await asyncpg.connect(dsn)
    try:
        async with QuerySampler(dsn, interval=0.01) as sampler:
            await conn.fetchval("SELECT pg_sleep(0.5)")
        assert sampler.samples > 5
        sleeping = [q for q in sampler.seen if "pg_sleep" in q]
        assert sleeping, sampler.seen
    finally:
        await conn.close()
