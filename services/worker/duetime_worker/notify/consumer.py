"""The dead-letter consumer: ``duetime.deadletter`` in a consumer group of its own, each event
handed to the notifier, a bounded number at a time.

An event's offset becomes committable only once its notification was delivered, rejected or
abandoned, and a partition's commit never passes an event still being delivered, so a crash
or a rebalance redelivers rather than loses (the receiver recognises a repeat by its
idempotency key). Deliveries run side by side, so one slow webhook delays only its own events'
commits, never the others' deliveries. While every slot is busy the partitions are paused and
still polled, so long deliveries do not drop the consumer from its group.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiokafka import TopicPartition
from aiokafka.errors import KafkaError

from duetime.events.v1.events_pb2 import DeadLetterEvent
from duetime_infra.kafka.connect import group_consumer, subscribe_when_reachable
from duetime_infra.kafka.topics import DEAD_LETTER_TOPIC
from duetime_infra.tls import ClientTls
from duetime_worker.intake.offsets import CommitOnRevoke, TrackedCommits, decode_or_skip
from duetime_worker.notify.notifier import Notifier
from duetime_worker.notify.wire import dead_letter_of

log = logging.getLogger(__name__)

POLL_MS = 500


class DeadLetterConsumer:
    def __init__(
        self,
        bootstrap: str,
        group: str,
        client_id: str,
        concurrency: int,
        notifier: Notifier,
        topic: str = DEAD_LETTER_TOPIC,
        tls: ClientTls | None = None,
    ) -> None:
        self._consumer = group_consumer(bootstrap, group, client_id, tls)
        self._topic = topic
        self._concurrency = concurrency
        self._notifier = notifier
        self._commits = TrackedCommits(self._consumer)
        self.offsets = self._commits.offsets
        self._tasks: set[asyncio.Task[None]] = set()
        self.handled = 0
        self._started = False

    async def start(self, stopping: asyncio.Event | None = None) -> bool:
        """Connects and subscribes, waiting while Kafka is unreachable; False when ``stopping``
        was set first. ``run`` calls it, so a worker starts serving during a Kafka outage."""
        if not self._started:
            self._started = await subscribe_when_reachable(
                self._consumer,
                [self._topic],
                CommitOnRevoke(self),
                "dead-letter consumer",
                stopping,
            )
        return self._started

    async def commit(self, only: set[TopicPartition] | None = None) -> None:
        await self._commits.commit(only)

    def _spawn(self, record: Any) -> None:
        message = decode_or_skip(record, DeadLetterEvent, self.offsets)
        if message is None:
            return
        event = dead_letter_of(message)
        tp = TopicPartition(record.topic, record.partition)
        offset = record.offset
        self.offsets.add(tp, offset)
        traceparent = next(
            (bytes(v).decode(errors="replace") for k, v in record.headers if k == "traceparent"),
            "",
        )

        async def deliver() -> None:
            try:
                await self._notifier.deliver(event, traceparent)
                self.handled += 1
            except Exception:
                # A bug, not an answer: logged loudly and passed over, so it cannot hold the
                # partition's commits back for ever.
                log.exception(
                    "dead-letter notification failed",
                    extra={"action": "notification_error", "run_id": event.run_id},
                )
            self.offsets.done(tp, offset)

        task = asyncio.create_task(deliver())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def run(self, stopping: asyncio.Event) -> None:
        """Consumes until ``stopping`` is set; deliveries in flight are left to ``drain``."""
        if not await self.start(stopping):
            return
        while not stopping.is_set():
            free = self._concurrency - len(self._tasks)
            assigned = self._consumer.assignment()
            if free <= 0:
                self._consumer.pause(*assigned)
            else:
                self._consumer.resume(*assigned)
            try:
                batches = await self._consumer.getmany(timeout_ms=POLL_MS, max_records=max(1, free))
            except KafkaError as error:
                log.warning(
                    "dead-letter fetch failed",
                    extra={"action": "fetch_failed", "error": type(error).__name__},
                )
                await asyncio.sleep(POLL_MS / 1000)
                continue
            for batch in batches.values():
                for record in batch:
                    self._spawn(record)
            await self.commit()

    async def drain(self, grace: float) -> None:
        """Lets deliveries in flight finish within ``grace``; the rest are cancelled and not
        committed, so another worker delivers them. Then commits and closes."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=grace)
        for task in set(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)
        await self.commit()
        await self._consumer.stop()
