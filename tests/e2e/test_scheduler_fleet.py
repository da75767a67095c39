"""Schedulers as separate processes on real etcd and PostgreSQL: failover and fencing."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import asyncpg
import pytest

from duetime_infra.pg.pool import create_pool
from testkit.fleet import (
    TTL_SECONDS,
    assert_every_occurrence_accounted_once,
    new_prefix,
    owners,
    schedulers,
)
from testkit.jobs import create_jobs, interval_job
from testkit.polling import eventually


@pytest.fixture
async def pool(db_dsn: str) -> AsyncIterator[asyncpg.Pool[asyncpg.Record]]:
    pool = await create_pool(db_dsn, max_size=4)
    yield pool
    await pool.close()


async def all_owned_by(prefix: str, ids: set[str]) -> bool:
    held = await owners(prefix)
    return len(held) == 1024 and {owner for owner, _ in held.values()} == ids


async def runs_claimed_by(pool: asyncpg.Pool[asyncpg.Record], scheduler_id: str) -> int:
    return int(
        await pool.fetchval("SELECT count(*) FROM run_claims WHERE claimed_by = $1", scheduler_id)
    )


@pytest.mark.timeout(180)
async def test_kill_9_under_load_loses_and_duplicates_nothing(
    db_dsn: str, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await create_jobs(pool, [interval_job(2) for _ in range(600)])
    prefix = new_prefix()
    async with schedulers(db_dsn, prefix, ["s1", "s2", "s3"]) as fleet:
        await eventually(lambda: all_owned_by(prefix, {"s1", "s2", "s3"}), 20, "three-way split")
        await eventually(
            lambda: _all_positive([runs_claimed_by(pool, s) for s in ("s1", "s2", "s3")]),
            20,
            "all three schedulers claiming",
        )
        fleet["s2"].process.send_signal(signal.SIGKILL)
        took = await eventually(
            lambda: all_owned_by(prefix, {"s1", "s3"}), TTL_SECONDS + 5, "takeover"
        )
        print(f"takeover after kill -9: {took:.2f} s (lease TTL {TTL_SECONDS} s)")
        # Keep claiming under load for a while after the takeover.
        before = await pool.fetchval("SELECT count(*) FROM runs")
        await eventually(
            lambda: _more_runs(pool, before + 3000), 30, "3,000 more runs after the takeover"
        )
    async with pool.acquire() as conn:
        checked = await assert_every_occurrence_accounted_once(conn)
    assert checked > 5000


@pytest.mark.timeout(180)
async def test_a_frozen_scheduler_cannot_commit_after_it_wakes(
    db_dsn: str, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await create_jobs(pool, [interval_job(1) for _ in range(300)])
    prefix = new_prefix()
    async with schedulers(db_dsn, prefix, ["a", "b"]) as fleet:
        await eventually(lambda: all_owned_by(prefix, {"a", "b"}), 20, "two-way split")
        await eventually(lambda: _all_positive([runs_claimed_by(pool, "a")]), 20, "a claiming")
        held_by_a = {p: rev for p, (owner, rev) in (await owners(prefix)).items() if owner == "a"}
        stale_revision = max(held_by_a.values())
        a = fleet["a"].process
        a.send_signal(signal.SIGSTOP)
        frozen_at = await pool.fetchval("SELECT duetime_now()")
        try:
            took = await eventually(
                lambda: all_owned_by(prefix, {"b"}), TTL_SECONDS + 5, "b owns all"
            )
            # b claims a's former partitions without being stalled by anything a held.
            stalled = await eventually(
                lambda: _claimed_in(pool, "b", list(held_by_a), frozen_at),
                TTL_SECONDS + 5,
                "b claiming a's partitions",
            )
            print(
                f"frozen scheduler taken over in {took:.2f} s; claims resumed {stalled:.2f} s later"
            )
        finally:
            a.send_signal(signal.SIGCONT)
        # a wakes with its lease long gone: it must rejoin with new keys and claim only under
        # their newer tokens.
        try:
            await eventually(
                lambda: _claimed_in(pool, "a", list(range(1024)), frozen_at), 30, "a claiming again"
            )
        except AssertionError:
            print("\n".join(fleet["a"].output[-60:]))
            raise
    # Whatever a committed after it froze, it committed under a token newer than any it held
    # before: none of its stale claims went through.
    stale = await pool.fetchval(
        "SELECT count(*) FROM run_claims WHERE claimed_by = 'a' AND create_time > $1 "
        "AND claim_revision <= $2",
        frozen_at,
        stale_revision,
    )
    assert stale == 0
    async with pool.acquire() as conn:
        await assert_every_occurrence_accounted_once(conn)


async def _all_positive(counts: list[Coroutine[Any, Any, int]]) -> bool:
    values = [await c for c in counts]
    return all(v > 0 for v in values)


async def _more_runs(pool: asyncpg.Pool[asyncpg.Record], than: int) -> bool:
    return int(await pool.fetchval("SELECT count(*) FROM runs")) > than


async def _claimed_in(
    pool: asyncpg.Pool[asyncpg.Record], scheduler_id: str, partitions: list[int], after: object
) -> bool:
    found = await pool.fetchval(
        "SELECT count(*) FROM run_claims "
        "WHERE claimed_by = $1 AND partition = ANY($2) AND create_time > $3",
        scheduler_id,
        partitions,
        after,
    )
    return int(found) > 0
