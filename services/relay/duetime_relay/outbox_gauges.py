"""The outbox's depth and the age of its oldest row, sampled for the metrics endpoint.

A scrape only reads the last sample: it never waits on the database, and a scraper polling
often cannot add load.
"""

from __future__ import annotations

from typing import TypeAlias

import asyncpg

from duetime_infra.pg.dispatch.outbox import outbox_backlog
from duetime_infra.telemetry import instruments

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"

SAMPLE_INTERVAL = 5.0


async def sample_outbox(pool: Pool) -> None:
    async with pool.acquire() as conn:
        depth, oldest_age = await outbox_backlog(conn)
    instruments.outbox_sampled(depth, oldest_age)
