"""The local stack's etcd and Kafka answer the client libraries Duetime uses."""

from __future__ import annotations

import os
import uuid

import aetcd
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from duetime_infra.kafka.topics import DEAD_LETTER_TOPIC, DISPATCH_TOPICS


async def test_etcd_create_if_absent_bound_to_a_lease() -> None:
    host, port = os.environ["DUETIME_ETCD_ENDPOINT"].rsplit(":", 1)
    key = f"/duetime-test/{uuid.uuid4()}".encode()
    async with aetcd.Client(host=host, port=int(port)) as client:
        lease = await client.lease(5)
        created = await client.transaction(
            compare=[client.transactions.create(key) == 0],
            success=[client.transactions.put(key, b"owner-1", lease=lease)],
            failure=[],
        )
        assert created[0] is True
        again = await client.transaction(
            compare=[client.transactions.create(key) == 0],
            success=[client.transactions.put(key, b"owner-2")],
            failure=[],
        )
        assert again[0] is False
        got = await client.get(key)
        assert got is not None
        assert got.value == b"owner-1"
        assert got.create_revision > 0
        await lease.revoke()
        assert await client.get(key) is None


async def test_kafka_topics_exist_and_an_idempotent_producer_round_trips() -> None:
    bootstrap = os.environ["DUETIME_KAFKA_BOOTSTRAP"]
    topic = DISPATCH_TOPICS[next(iter(DISPATCH_TOPICS))]
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, acks="all")
    await producer.start()
    try:
        payload = uuid.uuid4().bytes
        meta = await producer.send_and_wait(
            topic, payload, key=b"job-1", headers=[("traceparent", b"00-x")]
        )
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        topics = await consumer.topics()
        assert set(DISPATCH_TOPICS.values()) | {DEAD_LETTER_TOPIC} <= topics
        partition = TopicPartition(topic, meta.partition)
        consumer.assign([partition])
        consumer.seek(partition, meta.offset)
        record = await consumer.getone()
        assert (record.value, record.key) == (payload, b"job-1")
        assert dict(record.headers)["traceparent"] == b"00-x"
    finally:
        await consumer.stop()
