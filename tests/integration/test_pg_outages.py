"""Which PostgreSQL errors leave the pool as DatabaseUnavailable (an outage: answered
UNAVAILABLE with a retry delay), and which stay what they are."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from duetime_infra.pg.pool import DatabaseUnavailable, create_pool
from testkit.kafka import free_port

pytestmark = pytest.mark.timeout(30)


async def test_a_refused_connection_is_an_outage() -> None:
    nowhere = f"postgresql://duetime:duetime@127.0.0.1:{free_port()}/duetime"
    pool = await create_pool(nowhere, min_size=0)
    try:
        with pytest.raises(DatabaseUnavailable) as raised:
            await pool.fetchval("SELECT 1")
        assert isinstance(raised.value.__cause__, OSError)
        with pytest.raises(DatabaseUnavailable):
            async with pool.acquire():
                pass
    finally:
        await pool.close()


async def test_a_session_ended_by_the_server_is_an_outage(db_dsn: str) -> None:
    pool = await create_pool(db_dsn, min_size=1, max_size=1)
    killer = await asyncpg.connect(db_dsn)
    try:
        # asyncpg fails the next call in one of several ways, by whether it saw the session
        # end before the call: each is the same outage.
        for _ in range(8):
            with pytest.raises(DatabaseUnavailable):
                async with pool.acquire() as conn:
                    pid = await conn.fetchval("SELECT pg_backend_pid()")
                    await killer.execute("SELECT pg_terminate_backend($1)", pid)
                    await conn.fetchval("SELECT 1")
            # The pool connects again for the next caller.
            assert await pool.fetchval("SELECT 1") == 1
    finally:
        await killer.close()
        await pool.close()


async def test_errors_of_the_query_or_the_block_stay_what_they_are(db_dsn: str) -> None:
    pool = await create_pool(db_dsn, min_size=1, max_size=1)
    try:
        with pytest.raises(asyncpg.UndefinedTableError):
            await pool.fetch("SELECT * FROM no_such_table")
        with pytest.raises(TimeoutError):
            async with pool.acquire() as conn, asyncio.timeout(0.05):
                await conn.execute("SELECT pg_sleep(5)")
        with pytest.raises(ConnectionResetError):
            async with pool.acquire():
                raise ConnectionResetError("another server's connection")
        assert await pool.fetchval("SELECT 1") == 1
    finally:
        await pool.close()


async def test_a_session_ended_as_the_block_ends_is_an_outage_or_nothing(db_dsn: str) -> None:
    """The release resets the session: on a session the server is ending just then, that
    fails (whichever way asyncpg's state says) as an outage, never a driver error (a
    PostgreSQL restart under the soak met InternalClientError here)."""
    pool = await create_pool(db_dsn, min_size=1, max_size=1)
    killer = await asyncpg.connect(db_dsn)
    try:
        outages = 0
        for _ in range(20):
            try:
                async with pool.acquire() as conn:
                    pid = await conn.fetchval("SELECT pg_backend_pid()")
                    await killer.execute("SELECT pg_terminate_backend($1)", pid)
            except DatabaseUnavailable:
                outages += 1
            assert await pool.fetchval("SELECT 1") == 1
        print(f"{outages} of 20 releases met the ending session")
    finally:
        await killer.close()
        await pool.close()
