"""Shared fixtures (real PostgreSQL databases per test from a migrated template), markers by
folder, and the hypothesis profiles."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support.databases import create_database, drop_database, migrated_template

pytest_plugins = ["tests.support.environments"]

# Each test is marked by its folder: `-m unit` runs only tests that need no server.
FOLDER_MARKERS = {"unit": "unit", "integration": "integration", "e2e": "e2e"}

# `--hypothesis-profile=dev` (scripts/test-unit) runs a fifth of each property test's
# examples (tests.support.properties.examples scales the explicit counts); CI runs them all.
settings.register_profile("dev", max_examples=20)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tests = Path(__file__).parent
    for item in items:
        folder = item.path.relative_to(tests).parts[0]
        if folder in FOLDER_MARKERS:
            item.add_marker(FOLDER_MARKERS[folder])


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
