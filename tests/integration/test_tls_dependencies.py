"""Real TLS connections to each dependency, with servers of the test's own: PostgreSQL with
ssl on (verify-full against the CA), etcd requiring client certificates, and Kafka's SSL
listener; each refuses a client that trusts another CA (or, for etcd, has no certificate)."""

from __future__ import annotations

import os
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaConnectionError

from duetime_infra.etcd.gateway import EtcdGateway, EtcdUnavailable
from duetime_infra.kafka.connect import security_options
from duetime_infra.kafka.producer import BatchProducer, Message
from duetime_infra.pg.pool import create_pool
from duetime_infra.tls import ClientTls
from testkit.etcd import private_tls_etcd
from testkit.kafka import (
    create_topics,
    delete_topics,
    private_kafka,
    shared_bootstrap,
    unique_topic,
)
from testkit.postgres import private_postgres
from testkit.tls import Certs, make_certs, stack_certs

pytestmark = pytest.mark.timeout(120)


async def stranger(tmp_path: Path) -> Certs:
    return await make_certs(tmp_path / "stranger")


async def test_postgres_over_tls_verified(tmp_path: Path) -> None:
    certs = await make_certs(tmp_path / "certs")
    async with private_postgres(certs) as pg:
        pool = await create_pool(pg.dsn, tls=ClientTls(certs.ca).ssl_context())
        try:
            encrypted = await pool.fetchval(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
            )
            assert encrypted is True
        finally:
            await pool.close()
        # verify-full checks the name too: "localhost" is in the certificate.
        by_name = await create_pool(
            pg.dsn.replace("127.0.0.1", "localhost"), tls=ClientTls(certs.ca).ssl_context()
        )
        await by_name.close()
        other = ClientTls((await stranger(tmp_path)).ca).ssl_context()
        with pytest.raises(ssl.SSLCertVerificationError):
            await create_pool(pg.dsn, tls=other)


async def test_etcd_with_client_certificates(tmp_path: Path) -> None:
    certs = await make_certs(tmp_path / "certs")
    async with private_tls_etcd(tmp_path, certs) as endpoint:
        gateway = EtcdGateway(endpoint, request_timeout=5, tls=certs.client())
        await gateway.connect()
        try:
            lease = await gateway.grant_lease(5)
            revision = await gateway.create_if_absent("/t/key", b"value", lease_id=lease.lease_id)
            assert revision is not None
            record = await gateway.get("/t/key")
            assert record is not None
            assert record.value == b"value"
        finally:
            await gateway.close()
        for tls in (certs.client(with_cert=False), (await stranger(tmp_path)).client()):
            refused = EtcdGateway(endpoint, request_timeout=2, tls=tls)
            await refused.connect()
            try:
                with pytest.raises(EtcdUnavailable):
                    await refused.get("/t/key")
            finally:
                await refused.close()


@asynccontextmanager
async def kafka_with_ssl(tmp_path: Path) -> AsyncIterator[tuple[str, str, Certs]]:
    """(plaintext bootstrap, SSL bootstrap, certificates): the stack's broker when it serves
    SSL (scripts/stack env), else a private one with an SSL listener (a broker's start is
    tens of seconds here)."""
    stack = stack_certs()
    if stack is not None and os.environ.get("DUETIME_STACK_KAFKA_TLS_BOOTSTRAP"):
        yield shared_bootstrap(), os.environ["DUETIME_STACK_KAFKA_TLS_BOOTSTRAP"], stack
        return
    certs = await make_certs(tmp_path / "certs")
    async with private_kafka(tmp_path / "kafka", certs) as kafka:
        yield kafka.bootstrap, kafka.ssl_bootstrap, certs


async def test_kafka_over_its_ssl_listener(tmp_path: Path) -> None:
    async with kafka_with_ssl(tmp_path) as (plaintext, bootstrap, certs):
        topic = unique_topic("tls")
        await create_topics(plaintext, [topic], partitions=1)
        try:
            await _produce_and_consume_over_ssl(bootstrap, topic, certs, tmp_path)
        finally:
            await delete_topics(plaintext, [topic])


async def _produce_and_consume_over_ssl(
    bootstrap: str, topic: str, certs: Certs, tmp_path: Path
) -> None:
    tls = certs.client(with_cert=False)
    producer = BatchProducer(bootstrap, client_id="tls-test", tls=tls)
    try:
        delivery = await producer.publish([Message(topic, b"k", b"over tls")])
        assert delivery.acked == [True]
    finally:
        await producer.close()
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, **security_options(tls)
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek(TopicPartition(topic, 0), 0)
        message = await consumer.getone()
        assert message.value == b"over tls"
    finally:
        await consumer.stop()
    untrusting = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        request_timeout_ms=3000,
        **security_options((await stranger(tmp_path)).client()),
    )
    with pytest.raises(KafkaConnectionError):
        await untrusting.start()
    await untrusting.stop()
