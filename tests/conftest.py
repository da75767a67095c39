"""Shared fixtures: real PostgreSQL databases per test from a migrated template."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from tests.support.databases import create_database, drop_database, migrated_template
from tests.support.secrets import ensure_test_keyring

# Before any service starts, in process or as a process (which inherits the environment).
ensure_test_keyring()


@pytest.fixture(scope="session")
async def template_db() -> AsyncIterator[str]:
    name = await migrated_template()
    yield name
    await drop_database(name)


@pytest.fixture
async def db_dsn(template_db: str) -> AsyncIterator[str]:
    name = f"duetime_t_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name, template=template_db)
    yield dsn
    await drop_database(name)
