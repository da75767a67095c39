"""A consumer group's offsets committed at its topics' current ends, so that it reads only what
is published from then on (`duetime-ops groups to-end`, the demo's and the tests' workers). A
group with live members is refused: Kafka takes offsets from outside a group only while it is
empty."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import CommitFailedError

from duetime_infra.kafka.connect import security_options
from duetime_infra.tls import ClientTls

# A topic just created may not be in the first metadata answer.
_METADATA_PATIENCE = 10.0


async def _partitions(consumer: AIOKafkaConsumer, topic: str) -> list[TopicPartition]:
    deadline = time.monotonic() + _METADATA_PATIENCE
    while not (found := consumer.partitions_for_topic(topic)):
        if time.monotonic() > deadline:
            raise LookupError(f"topic {topic!r} has no partitions (does it exist?)")
        await consumer._client.force_metadata_update()  # a new topic: ask the broker again
        await asyncio.sleep(0.1)
    return [TopicPartition(topic, p) for p in sorted(found)]


async def end_offsets(
    bootstrap: str, topics: Iterable[str], tls: ClientTls | None = None
) -> dict[TopicPartition, int]:
    """The next offset of every partition of ``topics``."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, **security_options(tls)
    )
    await consumer.start()
    try:
        partitions = [tp for topic in topics for tp in await _partitions(consumer, topic)]
        ends: dict[TopicPartition, int] = await consumer.end_offsets(partitions)
        return dict(ends)
    finally:
        await consumer.stop()


class GroupInUse(Exception):
    """The group has live members."""


async def group_to_end(
    bootstrap: str, group: str, topics: Iterable[str], tls: ClientTls | None = None
) -> int:
    """Commits ``group``'s offsets at ``topics``' ends; returns the partitions it set. Raises
    GroupInUse while the group has members."""
    ends = await end_offsets(bootstrap, topics, tls)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        **security_options(tls),
    )
    await consumer.start()
    try:
        consumer.assign(list(ends))
        try:
            await consumer.commit(ends)
        except CommitFailedError as error:
            raise GroupInUse(f"group {group} has live members: stop its consumers first") from error
    finally:
        await consumer.stop()
    return len(ends)
