"""Starting an aiokafka client while the brokers may be away: a service started during a Kafka
outage waits for the brokers (with backoff, logging each failure) instead of exiting, and can
still be stopped meanwhile; and the options that put a client on TLS."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Protocol

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
from aiokafka.errors import KafkaError

from duetime_core.backoff import DoublingBackoff
from duetime_infra.tls import ClientTls

log = logging.getLogger(__name__)


def security_options(tls: ClientTls | None) -> dict[str, Any]:
    """aiokafka client keyword arguments: SSL verified with the CA (and this process's
    certificate for a broker that asks for one), or nothing for plaintext."""
    if tls is None:
        return {}
    return {"security_protocol": "SSL", "ssl_context": tls.ssl_context()}


def group_consumer(
    bootstrap: str, group: str, client_id: str, tls: ClientTls | None, **options: Any
) -> AIOKafkaConsumer:
    """A consumer in ``group`` that commits by hand, once a message is handled, and reads a
    partition the group never committed from its earliest offset; ``options`` go to
    aiokafka."""
    return AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=client_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **security_options(tls),
        **options,
    )


class Startable(Protocol):
    async def start(self) -> None: ...


async def start_when_reachable(
    client: Startable,
    what: str,
    stopping: asyncio.Event,
    *,
    first_backoff: float = 0.5,
    max_backoff: float = 10.0,
) -> bool:
    """Starts ``client``, trying again while the brokers cannot be reached; False when
    ``stopping`` was set before it could start. (aiokafka clients may be started again after a
    failed start.)"""
    delays = DoublingBackoff(first_backoff, max_backoff)
    failures = 0
    while not stopping.is_set():
        try:
            await client.start()
        except KafkaError as error:
            failures += 1
            backoff = delays.next()
            log.warning(
                "kafka unreachable; trying again",
                extra={
                    "action": "kafka_unreachable",
                    "client": what,
                    "error": f"{type(error).__name__}: {error}",
                    "failures": failures,
                    "backoff": backoff,
                },
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), backoff)
            continue
        if failures:
            log.info(
                "kafka reachable",
                extra={"action": "kafka_reachable", "client": what, "failures": failures},
            )
        return True
    return False


async def subscribe_when_reachable(
    consumer: AIOKafkaConsumer,
    topics: list[str],
    listener: ConsumerRebalanceListener,
    what: str,
    stopping: asyncio.Event | None,
) -> bool:
    """Starts ``consumer`` once the brokers can be reached and subscribes it to ``topics``;
    False when ``stopping`` was set first."""
    if not await start_when_reachable(consumer, what, stopping or asyncio.Event()):
        return False
    consumer.subscribe(topics, listener=listener)
    return True
