"""The worker's consumer lag on real Kafka, over topics of this test's own: messages published
and not yet taken, per topic, as the metric reports them; and the messages taken but not yet
started, which the lag no longer shows."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable

import pytest

from duetime_core.jobspec import Priority
from duetime_worker.intake.consumer import DispatchConsumer
from duetime_worker.intake.dispatch import Dispatch
from testkit.kafka import dispatch_topics, publish_dispatches, shared_bootstrap
from testkit.metrics import recorded_metrics
from testkit.polling import eventually

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def topics() -> AsyncIterator[dict[Priority, str]]:
    async with dispatch_topics("lag") as names:
        yield names


async def test_lag_counts_what_a_busy_worker_has_not_taken(topics: dict[Priority, str]) -> None:
    await publish_dispatches(topics[Priority.NORMAL], 5)
    release = asyncio.Event()

    async def handler(dispatch: Dispatch, delivery: str, answered: Callable[[], None]) -> None:
        await release.wait()  # one message pending, held: the other four wait on the topic
        answered()

    group = f"duetime-test-{uuid.uuid4().hex[:12]}"
    consumer = DispatchConsumer(shared_bootstrap(), group, "test", 1, handler, topics)
    await consumer.start()
    stopping = asyncio.Event()
    running = asyncio.create_task(consumer.run(stopping))
    expected = {topics[Priority.NORMAL]: 4, topics[Priority.HIGH]: 0, topics[Priority.LOW]: 0}
    try:
        with recorded_metrics() as metrics:

            async def lagging() -> bool:
                return await consumer.lag() == expected

            await eventually(lagging, 30, "four messages of five not taken")
            await consumer.record_lag()
            for topic, lag in expected.items():
                assert metrics.value("duetime.consumer.lag", topic=topic) == lag
            release.set()

            async def caught_up() -> bool:
                await consumer.record_lag()
                return metrics.value("duetime.consumer.lag") == 0

            await eventually(caught_up, 30, "every message taken")
    finally:
        release.set()
        stopping.set()
        await running
        await consumer.drain(1, lambda: None)


async def test_pending_counts_messages_taken_and_not_yet_started(
    topics: dict[Priority, str],
) -> None:
    await publish_dispatches(topics[Priority.HIGH], 3)
    due = asyncio.Event()
    answers: list[Callable[[], None]] = []

    async def handler(dispatch: Dispatch, delivery: str, answered: Callable[[], None]) -> None:
        answers.append(answered)
        await due.wait()  # held until its time: taken, not started

    group = f"duetime-test-{uuid.uuid4().hex[:12]}"
    consumer = DispatchConsumer(shared_bootstrap(), group, "test", 10, handler, topics)
    await consumer.start()
    stopping = asyncio.Event()
    running = asyncio.create_task(consumer.run(stopping))
    high = topics[Priority.HIGH]
    try:
        with recorded_metrics() as metrics:
            await eventually(lambda: len(answers) == 3, 30, "three messages taken")
            await eventually(lambda: _caught_up(consumer), 30, "nothing left on the topic")
            await consumer.record_lag()
            assert metrics.value("duetime.worker.pending", topic=high) == 3
            assert metrics.value("duetime.worker.pending", topic=topics[Priority.LOW]) == 0
            for answered in answers[:2]:
                answered()
            await consumer.record_lag()
            assert metrics.value("duetime.worker.pending", topic=high) == 1
    finally:
        due.set()
        stopping.set()
        await running
        await consumer.drain(1, lambda: None)


async def _caught_up(consumer: DispatchConsumer) -> bool:
    return sum((await consumer.lag()).values()) == 0
