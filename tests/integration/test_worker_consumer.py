"""The worker's dispatch consumer on real Kafka, over topics of this test's own: offsets are
committed only once a message's start was answered, priorities share the slots by weight
while low priority still moves, and messages not yet started on a partition taken away are
given up to its new owner."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiokafka import AIOKafkaProducer, TopicPartition

from duetime.events.v1.events_pb2 import RunDispatch
from duetime_core.jobspec import Priority
from duetime_worker.intake import consumer as consumer_module
from duetime_worker.intake.consumer import DispatchConsumer
from duetime_worker.intake.dispatch import Dispatch
from duetime_worker.intake.offsets import OffsetTracker
from testkit.kafka import (
    committed_offset,
    dispatch_topics,
    publish_dispatches,
    shared_bootstrap,
)
from testkit.polling import eventually

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def topics() -> AsyncIterator[dict[Priority, str]]:
    async with dispatch_topics("worker") as names:
        yield names


async def committed(group: str, tp: TopicPartition) -> int | None:
    return await committed_offset(shared_bootstrap(), group, tp)


def test_offset_tracker_never_commits_past_an_unanswered_message() -> None:
    tp = TopicPartition("t", 0)
    offsets = OffsetTracker()
    for offset in (5, 6, 7):
        offsets.add(tp, offset)
    offsets.done(tp, 6)
    offsets.done(tp, 7)
    assert offsets.committable() == {tp: 5}
    offsets.committed({tp: 5})
    assert offsets.committable() == {}
    offsets.done(tp, 5)
    assert offsets.committable() == {tp: 8}
    offsets.forget({tp})
    offsets.done(tp, 9)  # of a revoked partition: ignored
    assert offsets.committable() == {}


async def test_offsets_wait_for_the_start_answer(topics: dict[Priority, str]) -> None:
    topic = topics[Priority.NORMAL]
    await publish_dispatches(topic, 5)
    group = f"duetime-test-{uuid.uuid4().hex[:12]}"
    seen: dict[str, Callable[[], None]] = {}
    finish = asyncio.Event()

    async def handler(dispatch: Dispatch, delivery: str, answered: Callable[[], None]) -> None:
        seen[dispatch.run_id] = answered
        if not dispatch.run_id.endswith("-2"):
            answered()
        await finish.wait()  # the attempt runs on; the commit must not wait for it

    consumer = DispatchConsumer(shared_bootstrap(), group, "test", 10, handler, topics)
    await consumer.start()
    stopping = asyncio.Event()
    running = asyncio.create_task(consumer.run(stopping))
    tp = TopicPartition(topic, 0)
    try:
        await eventually(lambda: len(seen) == 5, 20, "five messages handled")
        await eventually(lambda: _equals(committed(group, tp), 2), 10, "commit up to offset 2")
        seen[f"{topic}-2"]()
        await eventually(lambda: _equals(committed(group, tp), 5), 10, "commit of all five")
    finally:
        stopping.set()
        await running
        await consumer.drain(0.1, finish.set)


async def test_attempts_started_and_held_leave_room_for_the_messages_behind_them(
    topics: dict[Priority, str],
) -> None:
    # A herd's attempts started ahead of their time wait for it: they must not stop the
    # consumer, or another team's runs wait behind them in the partition's order.
    await publish_dispatches(topics[Priority.NORMAL], 5)
    group = f"duetime-test-{uuid.uuid4().hex[:12]}"
    started = 0
    held = asyncio.Event()

    async def handler(dispatch: Dispatch, delivery: str, answered: Callable[[], None]) -> None:
        nonlocal started
        started += 1
        answered()  # started: it waits for its call time from here on
        await held.wait()

    consumer = DispatchConsumer(shared_bootstrap(), group, "test", 1, handler, topics)
    await consumer.start()
    stopping = asyncio.Event()
    running = asyncio.create_task(consumer.run(stopping))
    try:
        await eventually(lambda: started == 5, 20, "every message taken, one pending at a time")
    finally:
        held.set()
        stopping.set()
        await running
        await consumer.drain(1, lambda: None)


async def test_high_priority_gets_the_larger_share_and_low_still_moves(
    topics: dict[Priority, str],
) -> None:
    for topic in topics.values():
        await publish_dispatches(topic, 40)
    group = f"duetime-test-{uuid.uuid4().hex[:12]}"
    order: list[Priority] = []
    of_topic = {topic: priority for priority, topic in topics.items()}
    gate = asyncio.Event()

    async def handler(dispatch: Dispatch, delivery: str, answered: Callable[[], None]) -> None:
        await gate.wait()  # the first round fills every slot before anything finishes
        order.append(of_topic[dispatch.run_id.rsplit("-", 1)[0]])
        answered()
        await asyncio.sleep(0.01)

    consumer = DispatchConsumer(shared_bootstrap(), group, "test", 7, handler, topics)
    await consumer.start()
    stopping = asyncio.Event()
    running = asyncio.create_task(consumer.run(stopping))
    try:
        await eventually(lambda: consumer.consumed >= 7, 20, "the first slots filled")
        gate.set()
        await eventually(lambda: len(order) >= 70, 20, "seventy messages handled")
    finally:
        stopping.set()
        await running
        await consumer.drain(1, lambda: None)
    window = order[7:70]  # after the first (unweighted) round
    counts = {p: window.count(p) for p in Priority}
    print(counts)
    assert counts[Priority.HIGH] > counts[Priority.NORMAL] > counts[Priority.LOW] > 0


async def test_a_revoked_partitions_waiting_messages_go_to_its_new_owner_only() -> None:
    async with dispatch_topics("revoke", partitions=2) as names:
        topic = names[Priority.NORMAL]
        producer = AIOKafkaProducer(bootstrap_servers=shared_bootstrap())
        await producer.start()
        try:
            for partition in (0, 1):
                for i in range(3):
                    message = RunDispatch(
                        run_id=f"p{partition}-{i}", dispatch_id=f"d{partition}/{i}"
                    )
                    await producer.send_and_wait(
                        topic, message.SerializeToString(), partition=partition
                    )
        finally:
            await producer.stop()
        group = f"duetime-test-{uuid.uuid4().hex[:12]}"
        # Per consumer, the messages it is holding now (held until their time: never answered).
        holding: dict[str, Counter[str]] = {"a": Counter(), "b": Counter()}

        def holder(name: str) -> Callable[[Dispatch, str, Callable[[], None]], Awaitable[None]]:
            async def handler(dispatch: Dispatch, _: str, answered: Callable[[], None]) -> None:
                holding[name][dispatch.run_id] += 1
                try:
                    await asyncio.Event().wait()
                finally:
                    holding[name][dispatch.run_id] -= 1

            return handler

        consumers = {
            name: DispatchConsumer(shared_bootstrap(), group, name, 10, holder(name), names)
            for name in holding
        }
        stopping = asyncio.Event()
        running = []
        try:
            await consumers["a"].start()
            running.append(asyncio.create_task(consumers["a"].run(stopping)))
            await eventually(lambda: len(+holding["a"]) == 6, 20, "a holds all six")
            await consumers["b"].start()
            running.append(asyncio.create_task(consumers["b"].run(stopping)))

            async def split() -> bool:
                held_by = {name: set(+counts) for name, counts in holding.items()}
                return (
                    len(held_by["b"]) == 3
                    and held_by["a"] | held_by["b"]
                    == {f"p{p}-{i}" for p in (0, 1) for i in range(3)}
                    and not held_by["a"] & held_by["b"]
                    and all(n == 1 for counts in holding.values() for n in counts.values() if n)
                )

            await eventually(split, 30, "each message held once, by its partition's owner")
        finally:
            stopping.set()
            await asyncio.gather(*running)
            for consumer in consumers.values():
                await consumer.drain(0.1, lambda: None)


async def test_drain_waits_for_the_hand_backs_of_the_tasks_it_cancels(
    topics: dict[Priority, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(consumer_module, "HAND_BACK_WAIT", 0.2)
    topic = topics[Priority.NORMAL]
    await publish_dispatches(topic, 1)
    taken = asyncio.Event()
    reported = asyncio.Event()

    async def report() -> None:
        await asyncio.sleep(0.3)  # the hand-back's CompleteAttempt on its way
        reported.set()

    async def handler(dispatch: Dispatch, delivery: str, answered: Callable[[], None]) -> None:
        answered()
        taken.set()
        try:
            await asyncio.Event().wait()  # an attempt that does not stop when told to
        except asyncio.CancelledError:
            # As a start in flight is seen through and handed back despite a cancellation.
            await asyncio.shield(report())
            raise

    group = f"duetime-test-{uuid.uuid4().hex[:12]}"
    consumer = DispatchConsumer(shared_bootstrap(), group, "test", 10, handler, topics)
    await consumer.start()
    stopping = asyncio.Event()
    running = asyncio.create_task(consumer.run(stopping))
    await asyncio.wait_for(taken.wait(), 20)
    stopping.set()
    await running
    await consumer.drain(0, lambda: None)
    # The scheduler channel closes after the drain: the report must be through by then.
    assert reported.is_set()


async def _equals(value: Awaitable[int | None], expected: int) -> bool:
    return await value == expected
