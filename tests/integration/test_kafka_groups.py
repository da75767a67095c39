"""`duetime-ops groups to-end`: a group placed at its topics' ends reads only
what is published afterwards, on the real broker."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from duetime_infra.kafka.groups import GroupInUse, group_to_end
from testkit.kafka import own_topics, shared_bootstrap, unique_topic


async def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for value in values:
            await producer.send_and_wait(topic, value, partition=len(value) % 3)
    finally:
        await producer.stop()


async def test_a_group_moved_to_the_end_reads_only_what_comes_after() -> None:
    bootstrap = shared_bootstrap()
    topic = unique_topic("groups")
    group = f"duetime-test-groups-{uuid.uuid4().hex[:12]}"
    async with own_topics(bootstrap, [topic]):
        await produce(bootstrap, topic, [b"old-%d" % n for n in range(30)])
        command = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "duetime_ops",
            "groups",
            "to-end",
            group,
            topic,
            env={**os.environ, "DUETIME_KAFKA_BOOTSTRAP": bootstrap},
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await asyncio.wait_for(command.communicate(), timeout=60)
        assert command.returncode == 0
        assert f"group {group}: 3 partitions at their ends" in out.decode()
        await produce(bootstrap, topic, [b"new-%d" % n for n in range(5)])

        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",  # what a new group without the command would do
        )
        await consumer.start()
        try:
            seen: list[bytes] = []
            async with asyncio.timeout(30):
                while len(seen) < 5:
                    batch = await consumer.getmany(timeout_ms=500)
                    seen.extend(r.value for records in batch.values() for r in records)
        finally:
            await consumer.stop()
        assert sorted(seen) == sorted(b"new-%d" % n for n in range(5))


async def test_a_group_with_live_members_is_refused() -> None:
    bootstrap = shared_bootstrap()
    topic = unique_topic("groups")
    group = f"duetime-test-groups-{uuid.uuid4().hex[:12]}"
    async with own_topics(bootstrap, [topic]):
        member = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
        )
        await member.start()
        try:
            async with asyncio.timeout(30):
                while not member.assignment():
                    await member.getmany(timeout_ms=200)
            with pytest.raises(GroupInUse, match="has live members"):
                await group_to_end(bootstrap, group, [topic])
        finally:
            await member.stop()
