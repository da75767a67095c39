"""Fixtures the integration modules share: the job API on a fresh database, a pool on it, and
a Kafka topic and producer of the test's own on the shared broker."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from duetime_infra.kafka.producer import BatchProducer
from duetime_infra.pg.pool import create_pool
from testkit.api import ApiClient, running_api
from testkit.kafka import own_topics, shared_bootstrap, unique_topic


@pytest.fixture
async def api(db_dsn: str) -> AsyncIterator[ApiClient]:
    async with running_api(db_dsn) as client:
        yield client


@pytest.fixture
async def pool(db_dsn: str) -> AsyncIterator[asyncpg.Pool[asyncpg.Record]]:
    pool = await create_pool(db_dsn, max_size=6)
    yield pool
    await pool.close()


@pytest.fixture
async def topic() -> AsyncIterator[str]:
    """A topic of this test's own on the shared broker."""
    name = unique_topic()
    async with own_topics(shared_bootstrap(), [name]):
        yield name


@pytest.fixture
async def producer() -> AsyncIterator[BatchProducer]:
    producer = BatchProducer(shared_bootstrap(), client_id="test-relay", delivery_timeout=10)
    yield producer
    await producer.close()
