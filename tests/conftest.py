"""Shared fixtures (real PostgreSQL databases per test from a migrated template), markers by
folder, and the hypothesis profiles."""

from __future__ import annotations

import gc
import logging
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from testkit.databases import create_database, drop_database, migrated_template
from testkit.secrets import ensure_test_keyring

# Before any service starts, in process or as a process (which inherits the environment).
ensure_test_keyring()

pytest_plugins = ["testkit.environments", "testkit.s3"]

# Each test is marked by its folder: `-m unit` runs only tests that need no server.
FOLDER_MARKERS = {"unit": "unit", "integration": "integration", "e2e": "e2e"}

# `--hypothesis-profile=dev` (scripts/test-unit) runs a fifth of each property test's
# examples (testkit.properties.examples scales the explicit counts); CI runs them all.
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


class _Unexpected(logging.Handler):
    """Keeps what the gRPC interceptor logs as an unexpected error (answered INTERNAL)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "action", None) == "rpc_failed":
            self.messages.append(self.format(record))


@pytest.fixture(autouse=True)
def no_unexpected_errors_in_handlers() -> Iterator[None]:
    """An unexpected exception in a handler of a server running in the test's process fails
    the test, whatever the test itself checks (processes: testkit/processes.py)."""
    seen = _Unexpected()
    logger = logging.getLogger("duetime_infra.grpc.interceptors")
    logger.addHandler(seen)
    try:
        yield
    finally:
        logger.removeHandler(seen)
    if seen.messages:
        pytest.fail("a handler failed unexpectedly:\n" + "\n".join(seen.messages)[:4000])


@pytest.fixture(autouse=True)
def collector_on_between_tests() -> Iterator[None]:
    """A worker in the test's process pauses the garbage collector while calls are due, until
    they went out or its loop's timer ends the pause; a test whose loop closes first would
    leave it off for every test after it."""
    gc.enable()
    yield
    gc.enable()
