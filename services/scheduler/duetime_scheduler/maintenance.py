"""Run-history partitions: created ahead and dropped past retention by the owner of partition 0.

Exactly one scheduler owns partition 0 at a time, so one runs the maintenance; it is idempotent,
so an overlap during a handover costs a wasted call and nothing else.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import asyncpg

from duetime_infra.pg.fencing import FencingToken
from duetime_infra.pg.sql import q


class PartitionMaintenance:
    def __init__(
        self, interval_seconds: float = 3600.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        # Hourly is plenty: partitions are weekly and created four weeks ahead.
        self._interval = interval_seconds
        self._clock = clock
        self._last = float("-inf")

    async def __call__(
        self, pool: asyncpg.Pool[asyncpg.Record], tokens: Sequence[FencingToken]
    ) -> int:
        if not any(t.partition == 0 for t in tokens):
            return 0
        now = self._clock()
        if now - self._last < self._interval:
            return 0
        self._last = now
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(q("maintain_partitions"))
        return 1
