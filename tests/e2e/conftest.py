"""Fixtures the end-to-end modules share."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from testkit.live import Live, live_system


@pytest.fixture(scope="session")
def images_built() -> set[str]:
    """The images a test of this session built from this tree (``scripts/image build``): a
    later test that runs one needs no build of its own."""
    return set()


@pytest.fixture(scope="module")
async def live(template_db: str) -> AsyncIterator[Live]:
    """One live system for a module's tests (starting the services costs seconds)."""
    async with live_system(template_db) as system:
        yield system
