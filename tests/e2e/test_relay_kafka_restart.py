"""The relay as a process, against a Kafka broker of this test's own that is stopped and started
again: rows written while the broker is down wait in the outbox, and all of them are published
once it is back. The broker is private (own ports, own data under tmp_path, the stack's jars),
so stopping it disturbs no other test."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeAlias

import asyncpg
import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from duetime.events.v1.events_pb2 import RunDispatch
from duetime_infra.kafka.topics import DEAD_LETTER_TOPIC, DISPATCH_TOPICS
from duetime_infra.pg.dispatch.claims import claim_batch
from duetime_infra.pg.fencing import FencingToken
from duetime_infra.pg.pool import create_pool
from testkit.jobs import create_jobs, interval_job, shift_clock
from testkit.kafka import PrivateKafka, create_topics, end_offsets, read_between
from testkit.polling import eventually
from testkit.processes import Service, service

pytestmark = pytest.mark.timeout(150)

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"
ALL = {p: FencingToken(p, 0, 10) for p in range(1024)}
# Half-hourly jobs warm the relay up; hourly ones (and the half-hourly again) come due while
# the broker is down.
WARM_UP_JOBS = 50
HOURLY_JOBS = 3000
DOWN_ROWS = HOURLY_JOBS + WARM_UP_JOBS
TOPICS = sorted(DISPATCH_TOPICS.values())


@pytest.fixture
async def pool(db_dsn: str) -> AsyncIterator[Pool]:
    pool = await create_pool(db_dsn, max_size=4)
    yield pool
    await pool.close()


async def claim_due(pool: Pool) -> int:
    total = 0
    async with pool.acquire() as conn:
        while True:
            result = await claim_batch(
                conn, ALL, lookahead=timedelta(seconds=5), batch_size=500, still_owner=lambda: True
            )
            total += result.queued
            if not result.full:
                return total


async def outbox_count(pool: Pool) -> int:
    return int(await pool.fetchval("SELECT count(*) FROM outbox"))


async def health(relay: Service) -> int:
    async with grpc.aio.insecure_channel(relay.address) as channel:
        stub: Any = health_pb2_grpc.HealthStub(channel)  # the stubs do not declare Check
        answer = await stub.Check(health_pb2.HealthCheckRequest())
        return int(answer.status)


def failed_batches_since(relay: Service, mark: int) -> int:
    return sum('"produce_failed"' in line for line in relay.output[mark:])


async def test_rows_wait_while_kafka_is_down_and_all_drain_when_it_is_back(
    db_dsn: str, pool: Pool, tmp_path: Path
) -> None:
    started = time.monotonic()
    kafka = PrivateKafka(tmp_path / "kafka")
    jobs = [interval_job(1800) for _ in range(WARM_UP_JOBS)]
    jobs += [interval_job(3600) for _ in range(HOURLY_JOBS)]

    async def outbox_empty() -> bool:
        return await outbox_count(pool) == 0

    try:
        await kafka.format()
        await asyncio.gather(kafka.start(), create_jobs(pool, jobs))  # jobs made while it boots
        await create_topics(kafka.bootstrap, [*TOPICS, DEAD_LETTER_TOPIC], partitions=3)
        env = {
            "DUETIME_PG_DSN": db_dsn,
            "DUETIME_KAFKA_BOOTSTRAP": kafka.bootstrap,
            "DUETIME_RELAY_HEALTH_ADDRESS": "127.0.0.1:0",
            "DUETIME_RELAY_ID": "e2e-relay",
            "DUETIME_RELAY_PRODUCE_TIMEOUT": "3",
            # No worker starts these runs, and the clock jumps by half hours: keep the
            # reconciler from re-enqueueing them (its own tests are in the integration suite).
            "DUETIME_RECONCILE_AFTER": "86400",
        }
        async with service("duetime_relay", env, "DUETIME_RELAY_PORT") as relay:
            try:
                assert await health(relay) == health_pb2.HealthCheckResponse.SERVING
                # Warm up: the relay is connected and publishing before the broker goes away.
                await shift_clock(pool, timedelta(seconds=1800))
                assert await claim_due(pool) == WARM_UP_JOBS
                await eventually(outbox_empty, 20, "warm-up rows published")

                await kafka.stop()
                mark = len(relay.output)
                await shift_clock(pool, timedelta(seconds=1800))
                assert await claim_due(pool) == DOWN_ROWS
                written = await pool.fetch("SELECT payload FROM outbox")
                assert len(written) == DOWN_ROWS

                async def failed_twice() -> bool:
                    return failed_batches_since(relay, mark) >= 2

                # The relay tries, fails, and the rows stay.
                await eventually(failed_twice, 30, "two failed produce attempts, broker down")
                assert await outbox_count(pool) == DOWN_ROWS

                await kafka.start()
                took = await eventually(outbox_empty, 60, "the outbox drained after the restart")
                print(f"outbox drained {took:.1f} s after the broker answered again")
                relay.process.terminate()
                assert await asyncio.wait_for(relay.process.wait(), 20) == 0
                assert any('"relay stopped"' in line for line in relay.output)
            finally:
                print("relay output:", *relay.output[-40:], sep="\n")

        ends = await end_offsets(kafka.bootstrap, TOPICS)
        records = await read_between(kafka.bootstrap, dict.fromkeys(ends, 0), ends)
        counts = Counter(RunDispatch.FromString(r.value).dispatch_id for r in records)
        expected = {RunDispatch.FromString(w["payload"]).dispatch_id for w in written}
        assert expected <= set(counts)
        assert len(counts) == WARM_UP_JOBS + DOWN_ROWS
        duplicates = sum(counts.values()) - len(counts)
        print(f"{len(counts)} dispatches published, {duplicates} duplicates (at-least-once)")
    except BaseException:
        print("private kafka log:", kafka.tail(), sep="\n")
        raise
    finally:
        await kafka.stop()
        print(f"test took {time.monotonic() - started:.1f} s")
