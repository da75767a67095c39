"""An idempotent Kafka producer for batches: send every message, then wait for every
acknowledgment, and report each message's outcome.

A thin wrapper around aiokafka's ``AIOKafkaProducer`` (``enable_idempotence=True``, acks=all).
``publish`` never raises a driver error: a message is acknowledged or it is not, and the caller
keeps whatever was not. The wrapper owns the driver's lifecycle: it connects on first use, and
after a delivery that failed or timed out it throws the driver away and connects afresh on the
next ``publish``. An idempotent aiokafka producer retries an unacknowledged batch forever (it
never expires one, to keep its sequence numbers right), so a producer that lost its broker would
otherwise keep a growing backlog of stale copies and could not even be closed.

Each message is sent in the trace context it names, so the producer span the aiokafka
instrumentation makes (when it is on) joins the message's trace.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError
from opentelemetry import context as otel_context
from opentelemetry import propagate
from opentelemetry.context import Context
from opentelemetry.instrumentation.aiokafka import AIOKafkaInstrumentor

from duetime_infra.kafka.connect import security_options
from duetime_infra.tls import ClientTls

log = logging.getLogger(__name__)

# Per-message send() errors that mean "this message can never be produced as it is", not "the
# broker is unwell": the message fails alone and the producer stays.
_REJECTED = ("MessageSizeTooLargeError", "ValueError", "TypeError", "AssertionError")


@dataclass(frozen=True)
class Message:
    topic: str
    key: bytes
    value: bytes
    headers: Sequence[tuple[str, bytes]] = ()
    # The trace context to send it in; its own trace headers should carry the same.
    context: Context | None = None


def _headers_to_send(messages: Sequence[Message]) -> list[list[tuple[str, bytes]]]:
    """Each message's headers as sent. The aiokafka instrumentation, when on, appends the trace
    context of its producer span (a child of the message's context); a message must carry one
    ``traceparent``, so then the message's own trace headers are left out."""
    if not AIOKafkaInstrumentor().is_instrumented_by_opentelemetry:
        return [list(m.headers) for m in messages]
    fields = propagate.get_global_textmap().fields
    return [[h for h in m.headers if m.context is None or h[0] not in fields] for m in messages]


@dataclass(frozen=True)
class Delivery:
    """What happened to each message of a ``publish``: ``acked[i]`` for ``messages[i]``."""

    acked: list[bool]
    # Why messages were not acknowledged: error name -> how many.
    errors: dict[str, int] = field(default_factory=dict)
    # Topics the broker does not know (or will not let us see): their messages were not sent,
    # and the rest of the batch went ahead.
    unknown_topics: frozenset[str] = frozenset()

    @property
    def acked_count(self) -> int:
        return sum(self.acked)

    @property
    def failed_count(self) -> int:
        return len(self.acked) - self.acked_count


class BatchProducer:
    def __init__(
        self,
        bootstrap_servers: str,
        *,
        client_id: str = "duetime",
        delivery_timeout: float = 10.0,
        max_batch_bytes: int = 512 * 1024,
        linger_ms: int = 0,
        tls: ClientTls | None = None,
    ) -> None:
        self._bootstrap = bootstrap_servers
        self._security = security_options(tls)
        self._client_id = client_id
        # Bounds each publish (send and acknowledgments), the connection and each request.
        self._timeout = delivery_timeout
        self._metadata_timeout = min(2.0, delivery_timeout / 3)
        self._max_batch_bytes = max_batch_bytes
        self._linger_ms = linger_ms
        self._producer: Any = None
        # Set when a publish failed: the driver is replaced by ``recover`` (or, failing that,
        # before the next publish), not inside the publish, whose caller may hold a database
        # transaction open.
        self._broken = False
        self._lock = asyncio.Lock()

    @property
    def connected(self) -> bool:
        return self._producer is not None

    async def _connect(self) -> Any:
        if self._producer is not None:
            return self._producer
        producer = AIOKafkaProducer(
            bootstrap_servers=self._bootstrap,
            client_id=self._client_id,
            enable_idempotence=True,
            acks="all",
            request_timeout_ms=int(self._timeout * 1000),
            max_batch_size=self._max_batch_bytes,
            linger_ms=self._linger_ms,
            **self._security,
        )
        try:
            # Bootstrap and the idempotent producer id; bounded, as an unreachable broker can
            # keep the latter retrying.
            await asyncio.wait_for(producer.start(), self._timeout)
        except BaseException:
            await self._stop(producer)
            raise
        self._producer = producer
        log.info("kafka producer connected", extra={"action": "producer_connected"})
        return producer

    async def publish(self, messages: Sequence[Message]) -> Delivery:
        """Sends every message, then waits (within the delivery timeout overall) for the broker
        to acknowledge them all. Messages are sent in order; the broker keeps that order per
        partition. Safe to call from one task at a time (concurrent calls are serialised)."""
        if not messages:
            return Delivery([])
        async with self._lock:
            if self._broken:
                await self._discard()
            return await self._publish(messages)

    async def recover(self) -> None:
        """Replaces a driver that failed a publish; call it outside any transaction."""
        async with self._lock:
            if self._broken:
                await self._discard()

    async def _publish(self, messages: Sequence[Message]) -> Delivery:
        errors: collections.Counter[str] = collections.Counter()
        futures: list[asyncio.Future[Any] | None] = [None] * len(messages)
        rejected: set[int] = set()
        unknown: set[str] = set()
        broken = False
        try:
            async with asyncio.timeout(self._timeout):
                producer = await self._connect()
                unknown = await self._unknown_topics(producer, {m.topic for m in messages})
                headers = _headers_to_send(messages)
                for i, m in enumerate(messages):
                    if m.topic in unknown:
                        errors["UnknownTopic"] += 1
                        rejected.add(i)
                        continue
                    token = otel_context.attach(m.context) if m.context is not None else None
                    try:
                        futures[i] = await producer.send(
                            m.topic, m.value, key=m.key, headers=headers[i]
                        )
                    except Exception as error:
                        name = type(error).__name__
                        if name not in _REJECTED:
                            raise
                        errors[name] += 1
                        rejected.add(i)
                        log.error(
                            "message rejected by the producer",
                            extra={"action": "message_rejected", "topic": m.topic, "error": name},
                        )
                    finally:
                        if token is not None:
                            otel_context.detach(token)
                sent = [f for f in futures if f is not None]
                if sent:
                    await asyncio.wait(sent)
        except Exception as error:
            # TimeoutError when the broker did not answer in time; a driver error when it
            # could not be reached or refused the batch.
            broken = True
            name = type(error).__name__
            errors[name] += sum(
                1
                for i, f in enumerate(futures)
                if i not in rejected and (f is None or not f.done())
            )
        acked = []
        for f in futures:
            if f is None or not f.done():
                acked.append(False)
            elif f.cancelled() or f.exception() is not None:
                acked.append(False)
                broken = True
                errors[type(f.exception()).__name__ if not f.cancelled() else "Cancelled"] += 1
            else:
                acked.append(True)
        self._broken = self._broken or broken
        return Delivery(acked, dict(errors), frozenset(unknown))

    async def _unknown_topics(self, producer: Any, topics: set[str]) -> set[str]:
        """The topics whose partitions the producer cannot learn within a short wait. Known
        topics answer from the driver's metadata cache at once; without this, a message for a
        missing topic would hold the whole batch for the full timeout, every time."""
        unknown = set()
        for topic in sorted(topics):
            try:
                await asyncio.wait_for(producer.partitions_for(topic), self._metadata_timeout)
            except (TimeoutError, KafkaError):
                unknown.add(topic)
        return unknown

    async def _discard(self) -> None:
        self._broken = False
        producer, self._producer = self._producer, None
        if producer is not None:
            await self._cut_loose(producer)
            log.info("kafka producer discarded", extra={"action": "producer_discarded"})

    async def _cut_loose(self, producer: Any) -> None:
        # stop() waits for every batch the driver holds, and an idempotent producer retries
        # those forever while the broker is away. aiokafka has no public call to give them up,
        # so the driver is cut loose instead: its sender task is ended (a request in flight
        # finishes or fails within the request timeout), its connections are closed, and it is
        # marked closed. The batches it still held are dropped, unresolved, with it: their rows
        # are still in the outbox.
        try:
            async with asyncio.timeout(self._timeout + 5):
                await producer._sender.close()
                await producer.client.close()
        except Exception as error:
            log.warning(
                "kafka producer did not close cleanly",
                extra={"action": "producer_close_failed", "error": type(error).__name__},
            )
        producer._closed = True  # as stop() would: nothing is left to flush

    async def _stop(self, producer: Any) -> None:
        try:
            async with asyncio.timeout(self._timeout + 5):
                await producer.stop()
        except Exception as error:
            log.warning(
                "kafka producer did not stop in time; cut loose",
                extra={"action": "producer_stop_failed", "error": type(error).__name__},
            )
            await self._cut_loose(producer)

    async def close(self) -> None:
        """Flushes what was sent (nothing, between publishes) and disconnects."""
        async with self._lock:
            producer, self._producer = self._producer, None
            if producer is not None:
                await self._stop(producer)
