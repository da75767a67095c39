"""The dispatch consumer: the three priority topics in one consumer group, a bounded number of
messages waiting in the worker, weighted priorities, and offsets committed only once a
message's start was answered.

At most ``max_pending`` messages are taken and not yet answered (held until their time, waiting
for a slot, being started): there the worker's fair queues order them across teams. An attempt
once started no longer counts (its execution slot or early-start permit bounds it), so a herd's
attempts held until their time do not stop the consumer, leaving another team's runs behind
them in Kafka's first-in first-out partitions.

Each fetch round shares that room between the priorities by weight (``priorities``).

A message's offset becomes committable once StartAttempt answered (started or refused), and a
partition's commit never passes a message still waiting for its answer, so a crash redelivers
rather than loses (a redelivered start with the same dispatch id gets the same attempt back).

Messages not yet answered (held until their time, waiting for a slot, being started) are given
up when their partition is revoked or the worker stops: their tasks are cancelled, their
offsets stay uncommitted and the partition's next owner gets them. The handler sees a start
already sent through to its answer: on a revoke it runs what that start started (the next
owner's redelivery is refused ALREADY_STARTED), on a shutdown it hands it back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiokafka import TopicPartition
from aiokafka.errors import KafkaError
from opentelemetry import context as otel_context

from duetime.events.v1.events_pb2 import RunDispatch
from duetime_core.jobspec import Priority
from duetime_infra.kafka.connect import group_consumer, subscribe_when_reachable
from duetime_infra.kafka.topics import DISPATCH_TOPICS
from duetime_infra.telemetry import instruments
from duetime_infra.tls import ClientTls
from duetime_infra.tracecontext import context_of_kafka, tracing_active
from duetime_worker.intake.dispatch import Dispatch
from duetime_worker.intake.offsets import CommitOnRevoke, TrackedCommits, decode_or_skip
from duetime_worker.intake.priorities import PriorityFetch
from duetime_worker.intake.wire import dispatch_of

log = logging.getLogger(__name__)

COMMIT_INTERVAL = 0.2
# Consumer lag is sampled this often (seconds), each sample given at most the timeout.
LAG_SAMPLE_INTERVAL = 5.0
LAG_SAMPLE_TIMEOUT = 3.0
# While it may take no more messages, the consumer still polls this often to stay in its group.
SATURATED_POLL_SECONDS = 30.0
# On drain, how long the running attempts told to hand back may take to stop and report.
HAND_BACK_WAIT = 15.0
# Then, how long the messages' tasks, cancelled, may take to end: a start in flight is seen
# through and handed back despite the cancellation (its report within about one RPC timeout).
CANCELLED_WAIT = 12.0

Handler = Callable[[Dispatch, str, Callable[[], None]], Awaitable[None]]


class DispatchConsumer:
    def __init__(
        self,
        bootstrap: str,
        group: str,
        client_id: str,
        max_pending: int,
        handler: Handler,
        topics: Mapping[Priority, str] = DISPATCH_TOPICS,
        tls: ClientTls | None = None,
    ) -> None:
        self._consumer = group_consumer(
            bootstrap, group, client_id, tls, max_poll_interval_ms=300_000
        )
        self._topics = dict(topics)
        self._max_pending = max_pending
        self._handler = handler
        self._commits = TrackedCommits(self._consumer)
        self.offsets = self._commits.offsets
        self._tasks: set[asyncio.Task[None]] = set()
        # Tasks of messages not yet answered, with their partitions.
        self._starting: dict[asyncio.Task[None], TopicPartition] = {}
        self._room_freed = asyncio.Event()
        self._commit_wanted = asyncio.Event()
        self.consumed = 0
        self._fetch = PriorityFetch(self._consumer, topics)
        self._started = False

    async def start(self, stopping: asyncio.Event | None = None) -> bool:
        """Connects and subscribes, waiting while Kafka is unreachable; False when ``stopping``
        was set first. ``run`` calls it, so a worker starts serving during a Kafka outage."""
        if not self._started:
            self._started = await subscribe_when_reachable(
                self._consumer,
                sorted(self._topics.values()),
                CommitOnRevoke(self, self._give_up),
                "dispatch consumer",
                stopping,
            )
        return self._started

    async def commit(self, only: set[TopicPartition] | None = None) -> None:
        await self._commits.commit(only)

    async def _commit_loop(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            await self._commit_wanted.wait()
            self._commit_wanted.clear()
            await self.commit()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), COMMIT_INTERVAL)

    def _spawn(self, record: Any) -> None:
        tp = TopicPartition(record.topic, record.partition)
        offset = record.offset
        message = decode_or_skip(record, RunDispatch, self.offsets)
        if message is None:
            return
        dispatch = dispatch_of(message)
        delivery_id = message.dispatch_id or f"{tp.topic}/{tp.partition}/{offset}"
        self.offsets.add(tp, offset)
        task: asyncio.Task[None]

        def answered() -> None:
            if self._starting.pop(task, None) is None:
                # Given up (its partition revoked) and answered anyway: a start in flight that
                # came back STARTED runs here, but the offset is the partition's next owner's
                # to commit. Marked done here, it could settle that owner's redelivery of the
                # same offset if the partition came back to this consumer.
                return
            self.offsets.done(tp, offset)
            self._commit_wanted.set()
            self._room_freed.set()

        async def handle() -> None:
            try:
                await self._handler(dispatch, delivery_id, answered)
            except Exception:
                log.exception(
                    "dispatch handling failed",
                    extra={"action": "handler_error", "run_id": dispatch.run_id},
                )

        # The task copies the current context when created: attached here, the message's trace
        # context is the one its handler's spans continue.
        token = otel_context.attach(context_of_kafka(record.headers)) if tracing_active() else None
        task = asyncio.create_task(handle())
        if token is not None:
            otel_context.detach(token)
        self._tasks.add(task)
        self._starting[task] = tp
        self.consumed += 1

        def finished(t: asyncio.Task[None]) -> None:
            self._tasks.discard(t)
            self._starting.pop(t, None)
            self._room_freed.set()

        task.add_done_callback(finished)

    def _give_up(self, partitions: set[TopicPartition] | None = None) -> None:
        """Cancels the unanswered messages of ``partitions`` (None: all): not committed, they
        are redelivered to whoever holds the partition next."""
        for task, tp in list(self._starting.items()):
            if partitions is None or tp in partitions:
                del self._starting[task]
                task.cancel()

    def pending(self) -> dict[str, int]:
        """Per dispatch topic, the messages taken and not yet answered."""
        counts = dict.fromkeys(self._topics.values(), 0)
        for tp in self._starting.values():
            if tp.topic in counts:
                counts[tp.topic] += 1
        return counts

    async def _wait_for_room(self, stop_wait: asyncio.Task[bool]) -> None:
        """Waits for a message to be answered or done while still polling: a consumer that
        stops calling getmany for max_poll_interval leaves its group (messages held until their
        time far ahead would do that), so the partitions are paused and polled, delivering
        nothing, until there is room."""
        self._room_freed.clear()
        paused = list(self._consumer.assignment())
        self._consumer.pause(*paused)
        try:
            while not self._room_freed.is_set() and not stop_wait.done():
                freed = asyncio.create_task(self._room_freed.wait())
                await asyncio.wait(
                    {freed, stop_wait},
                    timeout=SATURATED_POLL_SECONDS,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                freed.cancel()
                if not self._room_freed.is_set():
                    with contextlib.suppress(KafkaError):
                        await self._consumer.getmany(timeout_ms=0)
        finally:
            self._consumer.resume(*[tp for tp in paused if tp in self._consumer.assignment()])

    async def run(self, stopping: asyncio.Event) -> None:
        """Consumes until ``stopping`` is set; in-flight messages are left to ``drain``."""
        if not await self.start(stopping):
            return
        committer = asyncio.create_task(self._commit_loop(stopping))
        stop_wait = asyncio.create_task(stopping.wait())
        try:
            while not stopping.is_set():
                free = self._max_pending - len(self._starting)
                if free <= 0:
                    await self._wait_for_room(stop_wait)
                    continue
                try:
                    records = await self._fetch.records(free)
                except KafkaError as error:
                    log.warning(
                        "fetch failed",
                        extra={"action": "fetch_failed", "error": type(error).__name__},
                    )
                    await asyncio.sleep(0.5)
                    continue
                for record in records:
                    self._spawn(record)
        finally:
            stop_wait.cancel()
            self._commit_wanted.set()
            await asyncio.wait([committer])

    async def lag(self) -> dict[str, int]:
        """Per dispatch topic, the messages on this consumer's partitions not yet taken: the
        partitions' end offsets (asked of the broker, since a paused partition's last fetched
        highwater goes stale) minus this consumer's positions; 0 for a topic none of whose
        partitions it holds."""
        lag = dict.fromkeys(self._topics.values(), 0)
        assigned = [tp for tp in self._consumer.assignment() if tp.topic in lag]
        if not assigned:
            return lag
        ends = await self._consumer.end_offsets(assigned)
        for tp in assigned:
            if tp not in self._consumer.assignment():
                continue  # revoked while the end offsets were asked for
            position = await self._consumer.position(tp)
            lag[tp.topic] += max(0, ends[tp] - position)
        return lag

    async def record_lag(self) -> None:
        """Samples ``lag`` into the consumer-lag metric; bounded, so a broker that does not
        answer cannot hold up a shutdown."""
        instruments.worker_pending_sampled(self.pending())
        async with asyncio.timeout(LAG_SAMPLE_TIMEOUT):
            instruments.consumer_lag_sampled(await self.lag())

    async def drain(self, grace: float, cancel_running: Callable[[], None]) -> None:
        """Gives up the messages not yet answered at once (not committed: redelivered; a start
        already sent is seen through, and handed back if it started); lets running attempts
        finish within ``grace``, then cancels them, so they are handed back and queued again
        for another worker, waiting (bounded) for those hand-backs to be reported, since the
        scheduler channel closes after this. Then commits what is settled and closes."""
        self._give_up()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=grace)
        if self._tasks:
            cancel_running()
            await asyncio.wait(set(self._tasks), timeout=HAND_BACK_WAIT)
        if self._tasks:
            for task in set(self._tasks):
                task.cancel()
            # Waited for, bounded: a cancelled task may still be handing back an attempt whose
            # start was in flight, and the scheduler channel closes once this returns; a report
            # cut off there leaves the attempt open until the reaper closes it as failed.
            await asyncio.wait(set(self._tasks), timeout=CANCELLED_WAIT)
        await self.commit()
        await self._consumer.stop()
