"""The outbox relay and its reconciler on real PostgreSQL and Kafka."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections import Counter
from datetime import datetime, timedelta
from typing import TypeAlias

import asyncpg
import pytest

from duetime.events.v1.events_pb2 import TARGET_KIND_HTTP, RunDispatch
from duetime.jobs.v1 import job_pb2
from duetime_api.jobs import JobOperations
from duetime_core.jobspec import Priority
from duetime_core.runkey import RunKey
from duetime_infra.dispatch import OutboxRow, dispatch_row
from duetime_infra.kafka.producer import BatchProducer
from duetime_infra.kafka.topics import DISPATCH_TOPICS
from duetime_infra.pg.dispatch.claims import claim_batch
from duetime_infra.pg.dispatch.outbox_writer import insert_outbox
from duetime_infra.pg.fencing import FencingToken
from duetime_infra.pg.jobs.store import JobStore
from duetime_infra.tracecontext import new_run_trace, read_trace
from duetime_relay.reconciler import Reconciler
from duetime_relay.relay import Relay
from testkit.jobs import TEAM, create_jobs, grant_priority, interval_job, shift_clock
from testkit.kafka import (
    Record,
    end_offsets,
    free_port,
    read_between,
    shared_bootstrap,
    unique_topic,
)
from testkit.polling import eventually
from testkit.secrets import secret_box

pytestmark = pytest.mark.timeout(90)

ALL = {p: FencingToken(p, 0, 10) for p in range(1024)}
Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"


async def claim_due(pool: Pool) -> int:
    total = 0
    async with pool.acquire() as conn:
        while True:
            result = await claim_batch(
                conn, ALL, lookahead=timedelta(seconds=5), batch_size=50, still_owner=lambda: True
            )
            total += result.queued
            if not result.full:
                return total


async def drain(relay: Relay, max_batches: int = 1000) -> int:
    published = 0
    for _ in range(max_batches):
        result = await relay.relay_batch()
        published += result.published
        if result.rows == 0:
            return published
    raise AssertionError("the outbox did not drain")


async def synthetic_rows(pool: Pool, topic: str, count: int) -> list[OutboxRow]:
    """Dispatch rows as ``dispatch_row`` makes them, retargeted to ``topic``, inserted with the
    outbox insert the scheduler uses."""
    now: datetime = await pool.fetchval("SELECT duetime_now()")
    rows = []
    for _ in range(count):
        run_id = uuid.uuid4()
        row = dispatch_row(
            run_id=run_id,
            key=RunKey.scheduled(uuid.uuid4(), now),
            team_id=TEAM,
            effective_time=now,
            priority=Priority.NORMAL,
            traceparent=new_run_trace(run_id).traceparent,
            now=now,
        )
        rows.append(dataclasses.replace(row, topic=topic))
    async with pool.acquire() as conn:
        for i in range(0, count, 1000):
            await insert_outbox(conn, rows[i : i + 1000])
    return rows


def as_published(
    topic: str, key: bytes, payload: bytes, headers: dict[str, bytes]
) -> tuple[str, bytes, bytes, str]:
    return topic, key, payload, headers.get("traceparent", b"").decode()


async def read_topic(topic: str) -> list[Record]:
    bootstrap = shared_bootstrap()
    ends = await end_offsets(bootstrap, [topic])
    return await read_between(bootstrap, dict.fromkeys(ends, 0), ends)


async def test_rows_from_claims_and_triggers_are_published_once_intact_and_deleted(
    pool: Pool, producer: BatchProducer
) -> None:
    await grant_priority(pool, Priority.HIGH)
    jobs = await create_jobs(
        pool,
        [interval_job(60) for _ in range(20)]
        + [interval_job(60, priority=job_pb2.PRIORITY_HIGH) for _ in range(5)],
    )
    await shift_clock(pool, timedelta(seconds=57))
    assert await claim_due(pool) == 25
    await JobOperations(JobStore(pool, secret_box())).trigger(
        TEAM, jobs[0].job_id, "relay-test-trigger"
    )
    written = await pool.fetch("SELECT topic, message_key, payload, headers FROM outbox")
    assert len(written) == 26
    expected = sorted(
        (r["topic"], r["message_key"], r["payload"], r["headers"]["traceparent"]) for r in written
    )
    assert all(traceparent.startswith("00-") for *_, traceparent in expected)
    # The shared dispatch topics, read from their ends now, filtered by this test's job ids.
    bootstrap = shared_bootstrap()
    topics = sorted(DISPATCH_TOPICS.values())
    start = await end_offsets(bootstrap, topics)

    relay = Relay(pool, producer, batch_size=10, poll_interval=0.05)
    assert await drain(relay) == 26

    assert await pool.fetchval("SELECT count(*) FROM outbox") == 0
    records = await read_between(bootstrap, start, await end_offsets(bootstrap, topics))
    ours = {str(j.job_id).encode() for j in jobs}
    published = sorted(
        as_published(r.topic, r.key or b"", r.value, r.headers) for r in records if r.key in ours
    )
    assert published == expected  # each row once, key, payload and traceparent intact
    high = {r.dispatch.run_id for r in records if r.topic == DISPATCH_TOPICS[Priority.HIGH]}
    assert len(high & {RunDispatch.FromString(w["payload"]).run_id for w in written}) == 5


async def test_two_relays_side_by_side_publish_every_row_once(pool: Pool, topic: str) -> None:
    rows = await synthetic_rows(pool, topic, 3000)
    producers = [BatchProducer(shared_bootstrap(), client_id=f"test-relay-{i}") for i in (1, 2)]
    relays = [Relay(pool, p, batch_size=100, poll_interval=0.02) for p in producers]
    stopping = asyncio.Event()
    tasks = [asyncio.create_task(r.run(stopping)) for r in relays]

    async def drained() -> bool:
        return bool(await pool.fetchval("SELECT count(*) = 0 FROM outbox"))

    try:
        await eventually(drained, 30, "the outbox drained", interval=0.05)
    finally:
        stopping.set()
        await asyncio.gather(*tasks)
        for p in producers:
            await p.close()
    assert await pool.fetchval("SELECT count(*) FROM outbox") == 0
    assert relays[0].published > 0
    assert relays[1].published > 0
    assert relays[0].published + relays[1].published == 3000

    records = await read_topic(topic)
    counts = Counter(r.dispatch.dispatch_id for r in records)
    assert set(counts) == {RunDispatch.FromString(r.payload).dispatch_id for r in rows}
    assert set(counts.values()) == {1}


async def test_a_produce_failure_leaves_the_rows_for_a_retry(
    pool: Pool, producer: BatchProducer, caplog: pytest.LogCaptureFixture
) -> None:
    await create_jobs(pool, [interval_job(60) for _ in range(5)])
    await shift_clock(pool, timedelta(seconds=57))
    assert await claim_due(pool) == 5
    before = await pool.fetch("SELECT id, headers FROM outbox ORDER BY id")

    nowhere = BatchProducer(f"127.0.0.1:{free_port()}", delivery_timeout=2)
    try:
        relay = Relay(pool, nowhere, batch_size=100, poll_interval=0.05)
        with caplog.at_level(logging.WARNING, logger="duetime_relay"):
            result = await relay.relay_batch()
    finally:
        await nowhere.close()
    assert (result.rows, result.published) == (5, 0)
    assert [r["id"] for r in await pool.fetch("SELECT id FROM outbox ORDER BY id")] == [
        r["id"] for r in before
    ]
    (warning,) = [r for r in caplog.records if getattr(r, "action", "") == "produce_failed"]
    assert getattr(warning, "count", 0) == 5
    logged = warning.getMessage() + repr(vars(warning))
    assert not any(r["headers"]["traceparent"] in logged for r in before)

    # The broker is back (a working producer): the same rows go out.
    assert await drain(Relay(pool, producer, batch_size=100, poll_interval=0.05)) == 5
    assert await pool.fetchval("SELECT count(*) FROM outbox") == 0


async def test_a_missing_topic_holds_back_only_its_own_rows(
    pool: Pool, producer: BatchProducer, topic: str
) -> None:
    missing = unique_topic("missing")  # never created; the broker does not auto-create topics
    await synthetic_rows(pool, topic, 10)
    await synthetic_rows(pool, missing, 3)
    await synthetic_rows(pool, topic, 10)
    relay = Relay(pool, producer, batch_size=100, poll_interval=0.05)

    first = await relay.relay_batch()
    assert (first.rows, first.published) == (23, 20)
    left = await pool.fetch("SELECT topic FROM outbox")
    assert [r["topic"] for r in left] == [missing] * 3
    # The missing topic is paused: the next batch does not wait on it again.
    assert (await relay.relay_batch()).rows == 0
    assert len(await read_topic(topic)) == 20


async def queued_run(pool: Pool) -> asyncpg.Record:
    run = await pool.fetchrow("SELECT * FROM runs WHERE state = 'QUEUED'")
    assert run is not None
    return run


async def dispatches(pool: Pool) -> list[tuple[str, bytes, RunDispatch, str]]:
    rows = await pool.fetch("SELECT topic, message_key, payload, headers FROM outbox ORDER BY id")
    return [
        (
            r["topic"],
            r["message_key"],
            RunDispatch.FromString(r["payload"]),
            r["headers"]["traceparent"],
        )
        for r in rows
    ]


async def test_the_reconciler_reenqueues_a_run_whose_message_was_lost_once_per_wait(
    pool: Pool, caplog: pytest.LogCaptureFixture
) -> None:
    skip = job_pb2.OVERLAP_POLICY_SKIP
    (job,) = await create_jobs(
        pool, [interval_job(3600, priority=job_pb2.PRIORITY_LOW, overlap_policy=skip)]
    )
    await shift_clock(pool, timedelta(seconds=3597))
    assert await claim_due(pool) == 1
    run = await queued_run(pool)
    ((_, _, original, _),) = await dispatches(pool)
    # Published, then lost (a consumer committed past it): no outbox row, the run still QUEUED.
    await pool.execute("DELETE FROM outbox")
    reconciler = Reconciler(pool, after=timedelta(seconds=60), interval=10)

    assert await reconciler.reconcile_once() == 0  # not even due yet
    await shift_clock(pool, timedelta(seconds=50))
    assert await reconciler.reconcile_once() == 0  # due, but not 60 s past it
    await shift_clock(pool, timedelta(seconds=30))  # now ~77 s past its effective time
    with caplog.at_level(logging.INFO, logger="duetime_relay"):
        assert await reconciler.reconcile_once() == 1
    assert any(
        getattr(r, "action", "") == "runs_reenqueued" and getattr(r, "count", 0) == 1
        for r in caplog.records
    )
    ((topic, key, message, traceparent),) = await dispatches(pool)
    assert topic == DISPATCH_TOPICS[Priority.LOW]
    assert key == str(job.job_id).encode()
    assert message.run_id == str(run["run_id"])
    assert message.idempotency_key == original.idempotency_key
    assert message.dispatch_id != original.dispatch_id
    assert message.target_kind == original.target_kind == TARGET_KIND_HTTP
    assert original.starts_at_its_time
    assert message.starts_at_its_time
    assert traceparent == read_trace(run["trace_context"], run["traceparent"], run["run_id"])
    assert (await queued_run(pool))["update_time"] > run["update_time"]

    # Not again on the next pass, with the new row pending or even once it is lost too.
    assert await reconciler.reconcile_once() == 0
    await pool.execute("DELETE FROM outbox")
    assert await reconciler.reconcile_once() == 0
    await shift_clock(pool, timedelta(seconds=61))
    # The wait since the last re-enqueue must also cover how long the run had waited then
    # (~77 s): the spacing grows while a run stays stuck.
    assert await reconciler.reconcile_once() == 0
    await shift_clock(pool, timedelta(seconds=20))
    assert await reconciler.reconcile_once() == 1
    assert len(await dispatches(pool)) == 1


async def test_the_reconciler_leaves_runs_whose_dispatch_row_is_pending(pool: Pool) -> None:
    await create_jobs(pool, [interval_job(3600) for _ in range(2)])
    await shift_clock(pool, timedelta(seconds=3597))
    assert await claim_due(pool) == 2
    await shift_clock(pool, timedelta(seconds=300))
    reconciler = Reconciler(pool, after=timedelta(seconds=60), interval=10)
    # Both rows waited 300 s: the relay is behind, so the pass is deferred altogether.
    assert await reconciler.reconcile_once() == 0
    # Rows the relay could be about to publish (written just now, as if by a slow commit)
    # match their runs: the runs are not re-enqueued.
    await pool.execute("UPDATE outbox SET create_time = duetime_now()")
    assert await reconciler.reconcile_once() == 0
    # One row published and lost: only its run is re-enqueued.
    lost = RunDispatch.FromString(
        await pool.fetchval(
            "DELETE FROM outbox WHERE id = (SELECT min(id) FROM outbox) RETURNING payload"
        )
    )
    assert await reconciler.reconcile_once() == 1
    (_, _, kept, _), (_, _, again, _) = await dispatches(pool)
    assert kept.run_id != lost.run_id
    assert again.run_id == lost.run_id
    assert again.dispatch_id != lost.dispatch_id
