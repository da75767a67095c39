"""The relay woken by the outbox's notifications on real PostgreSQL and Kafka: new rows go at
once though it polls only once a minute, a lost listener is replaced, and without one it polls
as often as before."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeAlias

import asyncpg
import pytest

from duetime_infra.kafka.producer import BatchProducer
from duetime_infra.pg.pool import connect
from duetime_relay.outbox_wake import OutboxWake
from duetime_relay.relay import Relay
from testkit.polling import eventually

from .test_relay import read_topic, synthetic_rows

pytestmark = pytest.mark.timeout(90)

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"
Connect = Callable[[], Awaitable["asyncpg.Connection[asyncpg.Record]"]]

# The relay's poll while listening, far longer than any wait below: a row published within
# the waits was found through its notification.
RARELY = 60.0
LISTENER = "test-relay-listen"


@asynccontextmanager
async def running(relay: Relay, connect_listener: Connect) -> AsyncIterator[OutboxWake]:
    stopping = asyncio.Event()
    tasks = [
        asyncio.create_task(relay.wake.listen(connect_listener, stopping)),
        asyncio.create_task(relay.run(stopping)),
    ]
    try:
        yield relay.wake
    finally:
        stopping.set()
        await asyncio.gather(*tasks)


async def published_at_once(pool: Pool, topic: str, count: int) -> None:
    """``count`` new rows reach ``topic`` within seconds."""
    before = len(await read_topic(topic))
    await synthetic_rows(pool, topic, count)
    await eventually(
        lambda: pool.fetchval("SELECT count(*) = 0 FROM outbox"), 10, "the rows published"
    )
    assert len(await read_topic(topic)) == before + count


async def listener_pid(pool: Pool) -> int | None:
    pid: int | None = await pool.fetchval(
        "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = "
        "current_database()",
        LISTENER,
    )
    return pid


async def test_a_listening_relay_publishes_new_rows_at_once_though_it_polls_rarely(
    pool: Pool, db_dsn: str, producer: BatchProducer, topic: str
) -> None:
    relay = Relay(pool, producer, batch_size=100, poll_interval=RARELY, idle_poll_interval=RARELY)
    async with running(relay, lambda: connect(db_dsn, None, {"application_name": LISTENER})):
        await eventually(lambda: relay.wake.listening, 10, "the relay listening")
        await published_at_once(pool, topic, 5)
        await published_at_once(pool, topic, 3)  # and again: each insert wakes it
        assert len(await read_topic(topic)) == 8


async def test_a_relay_whose_listener_is_cut_listens_again_and_publishes_at_once(
    pool: Pool, db_dsn: str, producer: BatchProducer, topic: str
) -> None:
    relay = Relay(pool, producer, batch_size=100, poll_interval=RARELY, idle_poll_interval=RARELY)
    relay.wake = OutboxWake(rand=lambda: 0.0)  # its shortest reconnect wait
    async with running(relay, lambda: connect(db_dsn, None, {"application_name": LISTENER})):
        await eventually(lambda: relay.wake.listening, 10, "the relay listening")
        first = await listener_pid(pool)
        assert first is not None
        assert await pool.fetchval("SELECT pg_terminate_backend($1)", first)
        await eventually(lambda: not relay.wake.listening, 10, "the cut seen")

        async def listens_anew() -> bool:
            return await listener_pid(pool) not in (None, first)

        await eventually(listens_anew, 15, "a new listener connection")
        await eventually(lambda: relay.wake.listening, 10, "the relay listening")
        await published_at_once(pool, topic, 4)


async def test_a_relay_that_cannot_listen_polls_at_its_short_interval(
    pool: Pool, producer: BatchProducer, topic: str
) -> None:
    async def refused() -> asyncpg.Connection[asyncpg.Record]:
        raise asyncpg.InterfaceError("no listener today")

    relay = Relay(pool, producer, batch_size=100, poll_interval=0.05, idle_poll_interval=RARELY)
    async with running(relay, refused):
        await published_at_once(pool, topic, 5)
        assert not relay.wake.listening
