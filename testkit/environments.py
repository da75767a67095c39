"""The test environment most integration tests share: the public API and the WorkerService,
in process, on the test's own database (fixture ``env``, registered by tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

import pytest

from testkit.api import ApiClient, running_api
from testkit.worker_api import WorkerClient, running_worker_api


class ApiAndWorkers(NamedTuple):
    api: ApiClient
    w: WorkerClient


@asynccontextmanager
async def api_and_workers(db_dsn: str, **worker_options: Any) -> AsyncIterator[ApiAndWorkers]:
    """Both services on ``db_dsn``; ``worker_options`` go to ``running_worker_api``."""
    async with running_api(db_dsn) as api, running_worker_api(db_dsn, **worker_options) as w:
        yield ApiAndWorkers(api, w)


@pytest.fixture
async def env(db_dsn: str) -> AsyncIterator[ApiAndWorkers]:
    async with api_and_workers(db_dsn) as both:
        yield both
