"""Fencing tokens: a newer owner's token shuts every older one out."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from duetime_infra.pg.fencing import FencingLost, FencingToken, fence
from testkit.polling import eventually


async def test_newer_token_wins_and_older_transactions_roll_back(db_dsn: str) -> None:
    conn = await asyncpg.connect(db_dsn)
    try:
        old = [FencingToken(7, 0, 100), FencingToken(8, 0, 100)]
        async with conn.transaction():
            await fence(conn, old)
        async with conn.transaction():
            await fence(conn, [FencingToken(7, 0, 250)])  # a new owner of partition 7
        await conn.execute("CREATE TABLE side_effects (x int)")
        with pytest.raises(FencingLost) as lost:
            async with conn.transaction():
                await conn.execute("INSERT INTO side_effects VALUES (1)")
                await fence(conn, old)
        assert lost.value.partitions == [7]
        assert await conn.fetchval("SELECT count(*) FROM side_effects") == 0
        # The same owner again, and a higher epoch beating any revision, both pass.
        async with conn.transaction():
            await fence(conn, [FencingToken(7, 0, 250), FencingToken(8, 0, 100)])
        async with conn.transaction():
            await fence(conn, [FencingToken(7, 1, 5)])
        with pytest.raises(FencingLost):
            async with conn.transaction():
                await fence(conn, [FencingToken(7, 0, 999)])
        stored = await conn.fetchrow(
            "SELECT epoch, revision FROM partition_tokens WHERE partition = 7"
        )
        assert stored is not None
        assert (stored["epoch"], stored["revision"]) == (1, 5)
    finally:
        await conn.close()


async def test_a_held_token_is_not_rewritten_and_a_newer_owner_waits_for_its_transaction(
    db_dsn: str,
) -> None:
    old, new = FencingToken(7, 0, 100), FencingToken(7, 0, 250)
    conn, newer, watch = [await asyncpg.connect(db_dsn) for _ in range(3)]
    try:
        async with conn.transaction():
            await fence(conn, [old])  # raised once, when the partition was taken
        version = "SELECT xmin::text FROM partition_tokens WHERE partition = 7"
        raised = await watch.fetchval(version)
        await fence_alone(conn, old)
        assert await watch.fetchval(version) == raised  # no row written
        claim = conn.transaction()
        await claim.start()
        await fence(conn, [old])
        taking = asyncio.create_task(fence_alone(newer, new))

        async def raise_waits() -> bool:
            waiting = await watch.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND query LIKE '/* fence_partitions */%'"
            )
            return int(waiting) > 0

        await eventually(raise_waits, 5, "the newer owner's raise waits", interval=0.01)
        assert not taking.done()
        await claim.commit()
        await taking
        with pytest.raises(FencingLost):
            await fence_alone(conn, old)
    finally:
        for c in (conn, newer, watch):
            await c.close()


async def fence_alone(conn: asyncpg.Connection[asyncpg.Record], token: FencingToken) -> None:
    async with conn.transaction():
        await fence(conn, [token])
