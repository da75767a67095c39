"""Dead-letter notifications against a real HTTP server and real Kafka: delivered once with the
event's idempotency key and its proto3 JSON, retried on retryable answers with backoff, never
retried on a final one, refused outside the allow-list, abandoned after the give-up time, and
offsets committed only once a notification is settled (a restart redelivers the rest)."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

import pytest
from aiokafka import AIOKafkaProducer, TopicPartition

from duetime.events.v1.events_pb2 import DeadLetterEvent
from duetime_core.jobspec import RetryPolicy
from duetime_worker.notify.consumer import DeadLetterConsumer
from duetime_worker.notify.event import DeadLetter
from duetime_worker.notify.notifier import Delivery, Notifier, NotifySettings
from duetime_worker.notify.wire import dead_letter_of
from duetime_worker.targets.http.allow_list import TargetPolicy
from duetime_worker.targets.http.caller import HttpCaller
from testkit.http_target import Behaviour, HttpTarget, http_target
from testkit.kafka import (
    committed_offset,
    free_port,
    own_topics,
    shared_bootstrap,
    unique_topic,
)
from testkit.polling import eventually

pytestmark = pytest.mark.timeout(60)

LOOPBACK = TargetPolicy.parse(["127.0.0.1"])
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
SECRET = "s3cr3t-t0ken"
FAST = NotifySettings(
    timeout=2,
    give_up_after=10,
    backoff=RetryPolicy(
        initial_backoff=timedelta(milliseconds=50), max_backoff=timedelta(milliseconds=200)
    ),
)


def event(url: str, run: int = 1, attempt: int = 3) -> DeadLetterEvent:
    message = DeadLetterEvent(
        run_id=f"00000000-0000-0000-0000-{run:012d}",
        job_id="11111111-1111-1111-1111-111111111111",
        team="team-a",
        job_name="teams/team-a/jobs/11111111-1111-1111-1111-111111111111",
        idempotency_key="11111111-1111-1111-1111-111111111111/2026-01-01T00:00:00Z",
        attempt=attempt,
        reason="ATTEMPTS_EXHAUSTED",
        last_error="HTTP 500",
        notification_url=url,
    )
    message.nominal_time.FromJsonString("2026-01-01T00:00:00Z")
    message.dead_letter_time.FromJsonString("2026-01-01T00:00:07Z")
    return message


def dead_letter(url: str, run: int = 1, attempt: int = 3) -> DeadLetter:
    """``event`` as the consumer hands it to the notifier."""
    return dead_letter_of(event(url, run, attempt))


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with http_target() as server:
        yield server


@asynccontextmanager
async def notifier(
    settings: NotifySettings = FAST, policy: TargetPolicy = LOOPBACK
) -> AsyncIterator[Notifier]:
    http = HttpCaller(policy)
    await http.start()
    try:
        yield Notifier(http, settings)
    finally:
        await http.close()


async def test_delivered_once_with_the_idempotency_key_and_the_event_as_json(
    target: HttpTarget,
) -> None:
    url = target.on("/hook", Behaviour()) + "?token=secret"
    async with notifier() as n:
        assert await n.deliver(dead_letter(url), TRACEPARENT) == Delivery.DELIVERED
    (call,) = target.calls_to("/hook")
    assert call.method == "POST"
    assert call.headers["Idempotency-Key"] == f"dead-letter/{event(url).run_id}/3"
    assert call.headers["Content-Type"] == "application/json"
    assert call.headers["traceparent"] == TRACEPARENT
    body = json.loads(call.body)
    assert body == {
        "runId": "00000000-0000-0000-0000-000000000001",
        "jobId": "11111111-1111-1111-1111-111111111111",
        "team": "team-a",
        "jobName": "teams/team-a/jobs/11111111-1111-1111-1111-111111111111",
        "idempotencyKey": "11111111-1111-1111-1111-111111111111/2026-01-01T00:00:00Z",
        "nominalTime": "2026-01-01T00:00:00Z",
        "attempt": 3,
        "reason": "ATTEMPTS_EXHAUSTED",
        "lastError": "HTTP 500",
        "deadLetterTime": "2026-01-01T00:00:07Z",
    }  # the URL is not echoed: it may hold a secret


@pytest.mark.parametrize("status", [500, 503, 429, 408])
async def test_retried_after_a_retryable_answer_then_delivered_with_the_same_key(
    target: HttpTarget, status: int
) -> None:
    url = target.on("/hook", Behaviour(fail_first=2, fail_status=status))
    async with notifier() as n:
        assert await n.deliver(dead_letter(url)) == Delivery.DELIVERED
    calls = target.calls_to("/hook")
    assert len(calls) == 3
    assert len({c.headers["Idempotency-Key"] for c in calls}) == 1
    # Equal jitter: each wait is at least half its cap (50 ms, then 100 ms).
    first, second = ((b.time - a.time).total_seconds() for a, b in itertools.pairwise(calls))
    assert first >= 0.025, first
    assert second >= 0.05, second


async def test_a_timeout_is_retried(target: HttpTarget) -> None:
    url = target.on("/slow", Behaviour(delay=5))
    settings = NotifySettings(timeout=0.3, give_up_after=10, backoff=FAST.backoff)

    async def fast_again() -> None:
        await eventually(lambda: len(target.calls_to("/slow")) >= 1, 10, "first try")
        target.on("/slow", Behaviour())

    async with notifier(settings) as n:
        delivered, _ = await asyncio.gather(n.deliver(dead_letter(url)), fast_again())
    assert delivered == Delivery.DELIVERED
    assert len(target.calls_to("/slow")) >= 2


@pytest.mark.parametrize("status", [400, 404, 410])
async def test_a_final_answer_is_not_retried(target: HttpTarget, status: int) -> None:
    url = target.on("/hook", Behaviour(status=status))
    async with notifier() as n:
        assert await n.deliver(dead_letter(url)) == Delivery.REJECTED
    assert len(target.calls_to("/hook")) == 1


async def test_an_address_outside_the_allow_list_is_never_called(target: HttpTarget) -> None:
    url = target.on("/hook", Behaviour())
    async with notifier(policy=TargetPolicy()) as n:  # public addresses only
        assert await n.deliver(dead_letter(url)) == Delivery.REJECTED
        localhost = url.replace("127.0.0.1", "localhost")
        assert await n.deliver(dead_letter(localhost)) == Delivery.REJECTED
        assert await n.deliver(dead_letter("ftp://127.0.0.1/hook")) == Delivery.REJECTED
    assert target.calls == []


async def test_an_unreachable_webhook_is_abandoned_after_the_give_up_time() -> None:
    url = f"http://127.0.0.1:{free_port()}/hook"  # nothing listens there
    settings = NotifySettings(timeout=1, give_up_after=1.5, backoff=FAST.backoff)
    async with notifier(settings) as n:
        began = time.monotonic()
        assert await n.deliver(dead_letter(url)) == Delivery.ABANDONED
        took = time.monotonic() - began
    assert 1.0 <= took <= 3.0, took


class FakeTime:
    """A clock that moves only when the notifier sleeps (each sleep is also a real yield)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


async def test_a_dead_webhook_holds_its_events_for_one_give_up_time_in_all(
    target: HttpTarget,
) -> None:
    url = target.on("/hook", Behaviour(status=503))
    settings = NotifySettings(timeout=1, give_up_after=5, backoff=FAST.backoff)
    fake = FakeTime()
    http = HttpCaller(LOOPBACK)
    await http.start()
    try:
        n = Notifier(http, settings, sleep=fake.sleep, clock=fake.clock)
        first = [n.deliver(dead_letter(url, run)) for run in range(1, 6)]
        assert await asyncio.gather(*first) == [Delivery.ABANDONED] * 5
        assert 1000 + 5 - 0.2 <= fake.now <= 1000 + 5  # one give-up time, for all five
        tried = len(target.calls_to("/hook"))
        assert tried > 10  # each was retried meanwhile
        # Still failing past its give-up time: later events get no waits; one of them probes
        # with a try, the others are abandoned without one while it is out.
        fake.now = waited = 1000 + 5
        later = [n.deliver(dead_letter(url, run)) for run in range(6, 11)]
        assert await asyncio.gather(*later) == [Delivery.ABANDONED] * 5
        assert fake.now == waited
        assert len(target.calls_to("/hook")) == tried + 1
        # With no probe out, the next event probes again: one try.
        assert await n.deliver(dead_letter(url, 99)) == Delivery.ABANDONED
        assert len(target.calls_to("/hook")) == tried + 2
        # Once it answers again, the next failing spell gets a whole give-up time again.
        target.on("/hook", Behaviour())
        assert await n.deliver(dead_letter(url, 11)) == Delivery.DELIVERED
        target.on("/hook", Behaviour(fail_first=len(target.calls_to("/hook")) + 2))
        assert await n.deliver(dead_letter(url, 12)) == Delivery.DELIVERED
    finally:
        await http.close()


@asynccontextmanager
async def on_fake_time(settings: NotifySettings) -> AsyncIterator[tuple[Notifier, FakeTime]]:
    fake = FakeTime()
    http = HttpCaller(LOOPBACK)
    await http.start()
    try:
        yield Notifier(http, settings, sleep=fake.sleep, clock=fake.clock), fake
    finally:
        await http.close()


OUTAGE = NotifySettings(timeout=3, give_up_after=5, backoff=FAST.backoff)


async def abandoned_through_an_outage(n: Notifier, fake: FakeTime, target: HttpTarget) -> str:
    """A webhook answering 503 until its first event is abandoned, one give-up time later."""
    url = target.on("/hook", Behaviour(status=503))
    assert await n.deliver(dead_letter(url, 1)) == Delivery.ABANDONED
    assert fake.now >= 1000 + 5 - 0.2
    return url


def failing_once_more(target: HttpTarget) -> None:
    target.on("/hook", Behaviour(fail_first=len(target.calls_to("/hook")) + 1, fail_status=503))


async def test_a_recovered_slow_webhook_gets_the_whole_timeout_after_an_outage(
    target: HttpTarget,
) -> None:
    async with on_fake_time(OUTAGE) as (n, fake):
        url = await abandoned_through_an_outage(n, fake, target)
        # Back, but slower than the shortest try: a first try still gets the whole timeout,
        # delivers, and ends the failing spell.
        target.on("/hook", Behaviour(delay=0.7))
        assert await n.deliver(dead_letter(url, 2)) == Delivery.DELIVERED
        assert await n.deliver(dead_letter(url, 3)) == Delivery.DELIVERED
    assert target.abandoned == []


async def test_past_its_give_up_time_a_webhook_gets_one_probe_at_a_time(
    target: HttpTarget,
) -> None:
    async with on_fake_time(OUTAGE) as (n, fake):
        url = await abandoned_through_an_outage(n, fake, target)
        fake.now = 1000 + 5  # the spell's give-up time has come
        tried = len(target.calls_to("/hook"))
        # Blackholed: the probe's try hangs until released.
        answer = asyncio.Event()
        target.on("/hook", Behaviour(hold=answer))
        probe = asyncio.create_task(n.deliver(dead_letter(url, 2)))
        await eventually(lambda: len(target.calls_to("/hook")) == tried + 1, 10, "probe")
        # While it is out, the other events are abandoned at once, without a request (they
        # would each have waited a whole timeout otherwise).
        others = asyncio.gather(*(n.deliver(dead_letter(url, run)) for run in range(3, 53)))
        assert await asyncio.wait_for(others, 1) == [Delivery.ABANDONED] * 50
        assert len(target.calls_to("/hook")) == tried + 1
        # The probe is answered: the spell is over, and the next event is retried as usual.
        answer.set()
        assert await probe == Delivery.DELIVERED
        failing_once_more(target)
        assert await n.deliver(dead_letter(url, 53)) == Delivery.DELIVERED
        assert len(target.calls_to("/hook")) == tried + 3


async def test_a_failure_long_ago_does_not_shorten_a_new_events_retries(
    target: HttpTarget,
) -> None:
    async with on_fake_time(OUTAGE) as (n, fake):
        url = await abandoned_through_an_outage(n, fake, target)
        fake.now += 7 * 24 * 3600  # a week without a failure: that spell is over
        failing_once_more(target)
        tried = len(target.calls_to("/hook"))
        assert await n.deliver(dead_letter(url, 2)) == Delivery.DELIVERED
        assert len(target.calls_to("/hook")) == tried + 2  # retried after a transient 503


async def test_a_final_answer_ends_the_failing_spell(target: HttpTarget) -> None:
    async with on_fake_time(OUTAGE) as (n, fake):
        url = await abandoned_through_an_outage(n, fake, target)
        target.on("/hook", Behaviour(status=404))  # reachable again, this event refused
        assert await n.deliver(dead_letter(url, 2)) == Delivery.REJECTED
        # No time passed, but the server answered: a transient 503 now is retried.
        failing_once_more(target)
        assert await n.deliver(dead_letter(url, 3)) == Delivery.DELIVERED


@pytest.mark.parametrize(
    "url",
    [
        f"ftp://127.0.0.1/hooks/{SECRET}",
        f"http://127.0.0.1:99999/hooks/{SECRET}",
        f"http://[::1/hooks/{SECRET}",
    ],
)
async def test_a_rejected_webhook_is_logged_by_host_alone(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with notifier() as n:
        assert await n.deliver(dead_letter(url)) == Delivery.REJECTED
    (logged,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert getattr(logged, "action", None) == "notification_rejected"
    assert SECRET not in json.dumps(logged.__dict__, default=str)


async def test_a_team_without_a_notification_url_gets_nothing(target: HttpTarget) -> None:
    async with notifier() as n:
        assert await n.deliver(dead_letter("")) == Delivery.NO_TARGET
    assert target.calls == []


# --- the consumer ---------------------------------------------------------------------------


@pytest.fixture
async def topic() -> AsyncIterator[str]:
    name = unique_topic("deadletter")
    async with own_topics(shared_bootstrap(), [name], partitions=1):
        yield name


async def publish(topic: str, events: list[DeadLetterEvent]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=shared_bootstrap())
    await producer.start()
    try:
        for e in events:
            await producer.send_and_wait(
                topic, e.SerializeToString(), headers=[("traceparent", TRACEPARENT.encode())]
            )
    finally:
        await producer.stop()


@asynccontextmanager
async def consuming(topic: str, group: str) -> AsyncIterator[DeadLetterConsumer]:
    http = HttpCaller(LOOPBACK)
    await http.start()
    patient = NotifySettings(timeout=40, give_up_after=60, backoff=FAST.backoff)
    consumer = DeadLetterConsumer(
        shared_bootstrap(), group, f"test-{group}", 4, Notifier(http, patient), topic
    )
    await consumer.start()
    stopping = asyncio.Event()
    running = asyncio.create_task(consumer.run(stopping))
    try:
        yield consumer
    finally:
        stopping.set()
        await running
        await consumer.drain(0)
        await http.close()


async def test_offsets_are_committed_only_once_a_notification_is_settled(
    topic: str, target: HttpTarget
) -> None:
    fast = target.on("/fast", Behaviour())
    slow = target.on("/slow", Behaviour(delay=30))
    events = [event(fast, 1), event(slow, 2), event(fast, 3), event("", 4)]
    await publish(topic, events)
    group = f"duetime-test-notify-{uuid.uuid4().hex[:12]}"
    tp = TopicPartition(topic, 0)

    async with consuming(topic, group):
        await eventually(
            lambda: len(target.calls_to("/fast")) == 2 and len(target.calls_to("/slow")) == 1,
            15,
            "both fast events delivered and the slow one under way",
        )
        # The slow one (offset 1) holds the commit back, though later events are settled.
        await eventually(lambda: _committed_is(group, tp, 1), 15, "the first event committed")
    # The consumer stopped (as a crash would) before the slow notification was settled.
    assert await committed_offset(shared_bootstrap(), group, tp) == 1

    target.on("/slow", Behaviour())
    async with consuming(topic, group):
        await eventually(
            lambda: _committed_is(group, tp, 4), 15, "everything settled and committed"
        )
    slow_calls = target.calls_to("/slow")
    assert len(slow_calls) == 2  # redelivered after the restart, with the same key
    assert {c.headers["Idempotency-Key"] for c in slow_calls} == {
        f"dead-letter/{events[1].run_id}/3"
    }
    assert all(c.headers["traceparent"] == TRACEPARENT for c in target.calls)
    # The fast event after the slow one was not committed either: delivered again, recognisably.
    assert len(target.calls_to("/fast")) == 3


async def _committed_is(group: str, tp: TopicPartition, expected: int) -> bool:
    return await committed_offset(shared_bootstrap(), group, tp) == expected
