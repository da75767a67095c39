"""Fencing tokens: a newer owner's token shuts every older one out."""

from __future__ import annotations

import asyncpg
import pytest

from duetime_infra.pg.fencing import FencingLost, FencingToken, fence


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
