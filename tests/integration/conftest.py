"""Fixtures the integration modules share: the job API on a fresh database, and a pool on it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from duetime_infra.pg.pool import create_pool
from testkit.api import ApiClient, running_api


@pytest.fixture
async def api(db_dsn: str) -> AsyncIterator[ApiClient]:
    async with running_api(db_dsn) as client:
        yield client


@pytest.fixture
async def pool(db_dsn: str) -> AsyncIterator[asyncpg.Pool[asyncpg.Record]]:
    pool = await create_pool(db_dsn, max_size=6)
    yield pool
    await pool.close()
