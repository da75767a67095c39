"""The relay loop: the transactional outbox drained into Kafka, one batch per transaction.

Each batch is one PostgreSQL transaction:

1. lock the oldest pending rows no other relay holds (``FOR UPDATE SKIP LOCKED``), so relays
   side by side each publish the rows they hold and never wait for each other;
2. produce them all through the idempotent producer, then wait for every acknowledgment
   (acks=all), within the produce timeout;
3. delete the acknowledged rows and COMMIT.

Rows the broker did not acknowledge (broker down, timeout) are not deleted: they stay in the
outbox and are retried with backoff; nothing is lost. Delivery is at-least-once: a relay that
dies after Kafka acknowledged a batch but before its COMMIT leaves the rows in place, and they
are published again (by it or another relay). The duplicate is harmless downstream, because
starting an attempt is a conditional write. The session's statement and idle-in-transaction
timeouts bound how long a frozen relay can keep its rows locked.

With tracing on, each row gets a "publish run" span in the trace its stored ``traceparent``
names, from send to the broker's answer, and the message carries that span's context instead.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

import asyncpg
from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from duetime_core.backoff import DoublingBackoff
from duetime_infra.kafka.producer import BatchProducer, Message
from duetime_infra.pg.dispatch.outbox import PendingRow, delete_rows, lock_batch
from duetime_infra.tracecontext import TRACER, context_of, tracing_active
from duetime_relay.outbox_wake import OutboxWake, first_set

log = logging.getLogger(__name__)

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"

# Backoff after a batch that published nothing: from FIRST_BACKOFF doubling up to MAX_BACKOFF
# seconds, with jitter, so relays do not retry a recovering broker in lockstep.
FIRST_BACKOFF = 0.2
MAX_BACKOFF = 5.0
# A topic the broker did not know is left alone this long (its rows stay pending), so one
# missing topic (say, a dead-letter topic never created) cannot hold back every other row.
UNKNOWN_TOPIC_PAUSE = 10.0


@dataclass(frozen=True)
class BatchResult:
    rows: int
    published: int
    errors: dict[str, int]

    @property
    def failed(self) -> int:
        return self.rows - self.published


def to_message(row: PendingRow, span: Span | None = None) -> Message:
    headers = row.headers
    context = None
    if span is not None:
        context = trace.set_span_in_context(span)
        headers = dict(headers)
        propagate.inject(headers, context)
    return Message(
        topic=row.topic,
        key=row.key,
        value=row.payload,
        headers=[(name, value.encode()) for name, value in headers.items()],
        context=context,
    )


def publish_span(row: PendingRow) -> Span:
    """The row's "publish run" span: a child of the context stored with the row."""
    return TRACER.start_span(
        "publish run",
        context=context_of(row.headers),
        kind=SpanKind.PRODUCER,
        attributes={
            "messaging.system": "kafka",
            "messaging.operation.type": "publish",
            "messaging.destination.name": row.topic,
        },
    )


def end_publish_spans(spans: list[Span], acked: list[bool], errors: dict[str, int]) -> None:
    for span, ok in zip(spans, acked, strict=True):
        if not ok:
            span.set_status(Status(StatusCode.ERROR, ", ".join(sorted(errors)) or "not sent"))
        span.end()


class Relay:
    def __init__(
        self,
        pool: Pool,
        producer: BatchProducer,
        *,
        batch_size: int,
        poll_interval: float,
        idle_poll_interval: float | None = None,
        wake: OutboxWake | None = None,
        rand: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pool = pool
        self._producer = producer
        self._batch_size = batch_size
        self._poll_interval = poll_interval
        self._idle_poll_interval = idle_poll_interval or poll_interval
        self.wake = wake or OutboxWake()
        self._rand = rand
        self._clock = clock
        # topic -> monotonic time until which its rows are left alone
        self._paused_topics: dict[str, float] = {}
        self.published = 0

    def _skip_topics(self) -> list[str]:
        now = self._clock()
        self._paused_topics = {t: u for t, u in self._paused_topics.items() if u > now}
        return list(self._paused_topics)

    async def relay_batch(self) -> BatchResult:
        """One batch: lock, produce, delete what was acknowledged, commit."""
        async with self._pool.acquire() as conn, conn.transaction():
            rows = await lock_batch(conn, self._batch_size, self._skip_topics())
            if not rows:
                return BatchResult(0, 0, {})
            if tracing_active():
                spans = [publish_span(r) for r in rows]
                messages = [to_message(r, s) for r, s in zip(rows, spans, strict=True)]
            else:
                spans, messages = [], [to_message(r) for r in rows]
            # Bounded by the producer's delivery timeout, well inside the session's
            # idle-in-transaction timeout.
            delivery = await self._producer.publish(messages)
            if spans:
                end_publish_spans(spans, delivery.acked, delivery.errors)
            acked = [r.id for r, ok in zip(rows, delivery.acked, strict=True) if ok]
            await delete_rows(conn, acked)
            # COMMIT on leaving the block. Dying before it (after Kafka acknowledged) leaves
            # the rows pending: they are published again, at-least-once.
        # A failed producer is replaced only now, with no transaction (and no row lock) open.
        await self._producer.recover()
        self.published += len(acked)
        if delivery.unknown_topics:
            log.warning(
                "Kafka does not know these topics; their rows wait",
                extra={
                    "action": "topics_unknown",
                    "topics": sorted(delivery.unknown_topics),
                    "pause_seconds": UNKNOWN_TOPIC_PAUSE,
                },
            )
            until = self._clock() + UNKNOWN_TOPIC_PAUSE
            self._paused_topics.update((t, until) for t in delivery.unknown_topics)
        if delivery.failed_count:
            unacked = {r.topic for r, ok in zip(rows, delivery.acked, strict=True) if not ok}
            log.warning(
                "outbox rows not acknowledged by Kafka; they stay for a retry",
                extra={
                    "action": "produce_failed",
                    "count": delivery.failed_count,
                    "published": len(acked),
                    "errors": delivery.errors,
                    "topics": sorted(unacked),
                },
            )
        return BatchResult(len(rows), len(acked), delivery.errors)

    async def run(self, stopping: asyncio.Event) -> None:
        """Relays batches until ``stopping`` is set; the batch in flight is finished, never cut.

        A full batch is followed by the next at once; otherwise the loop waits for new rows
        (``OutboxWake``), polling meanwhile. A batch that published nothing (broker down, a
        database error) backs off.
        """
        backoff = DoublingBackoff(FIRST_BACKOFF, MAX_BACKOFF, self._rand)
        while not stopping.is_set():
            try:
                result = await self.relay_batch()
            except Exception:
                # A connection cut, a database restart, a session timeout: the transaction
                # rolled back and the rows stay.
                log.exception("relay batch failed", extra={"action": "relay_batch_failed"})
                result = BatchResult(1, 0, {"database": 1})
            if result.rows and not result.published:
                await first_set(stopping, seconds=backoff.next())
                continue
            backoff.reset()
            if result.rows == self._batch_size and not result.failed:
                continue
            await self.wake.wait(stopping, self._poll_interval, self._idle_poll_interval)
