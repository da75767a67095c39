"""Operator command: commit a consumer group's offsets at its topics' current ends.

A new consumer group reads from the earliest offset (workers must not miss a dispatch), which
on a broker shared with tests or an earlier deployment means working through every message ever
kept. A group placed at the ends first sees only what is published from then on: the demo's
workers, a group created to replace one whose backlog was deliberately abandoned.

    python -m duetime_infra.kafka.groups to-end GROUP [TOPIC ...]   (default: dispatch topics)

A group with live members is refused (Kafka takes offsets from outside a group only while it is
empty): moving a running fleet past dispatches it has not started would leave those runs to the
reconciler, late.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterable

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import CommitFailedError

from duetime_infra.config import EnvReader
from duetime_infra.kafka.aiokafka_logs import quiet_aiokafka
from duetime_infra.kafka.connect import security_options
from duetime_infra.kafka.topics import DEFAULT_KAFKA_BOOTSTRAP, DISPATCH_TOPICS
from duetime_infra.tls import ClientTls, Link, read_tls

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


def main() -> None:
    import os

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    to_end = commands.add_parser("to-end", help="commit GROUP's offsets at the topics' ends")
    to_end.add_argument("group")
    to_end.add_argument("topics", nargs="*", default=sorted(DISPATCH_TOPICS.values()))
    args = parser.parse_args()
    quiet_aiokafka()  # a new group's coordinator, not ready yet, is not worth a line here
    bootstrap = os.environ.get("DUETIME_KAFKA_BOOTSTRAP", DEFAULT_KAFKA_BOOTSTRAP)
    env = EnvReader()
    tls = read_tls(env, serves=False, connects=[Link.KAFKA]).client(Link.KAFKA)
    env.finish()
    try:
        count = asyncio.run(group_to_end(bootstrap, args.group, args.topics, tls))
    except GroupInUse as error:
        print(f"groups: {error}", file=sys.stderr)
        sys.exit(2)
    print(f"group {args.group}: {count} partitions at their ends")


if __name__ == "__main__":
    main()
