"""The reconciler: a lost dispatch message cannot lose a run.

Every ``interval`` it looks for runs left QUEUED well past their not-before time (by
``after``, default 60 s) with no dispatch row pending in the outbox: their message was published
and then lost (a consumer that committed an offset it had not handled, a truncated topic). Each
gets a NEW dispatch outbox row, which the relay publishes like any other. A run whose message is
only slow to be consumed may be re-enqueued as well; the duplicate is harmless, because starting
an attempt is a conditional write.

Each re-enqueue touches the run's ``update_time``, and a run is re-enqueued only once it has been
untouched for ``after``, so one pass never repeats the previous one. A pass is bounded
(``max_per_pass`` runs), and skipped while the outbox holds a dispatch row older than ``after``:
the relay is not keeping up (Kafka is down), a new row would only queue behind the rest, and the
anti-join with a large outbox is costly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta
from typing import TypeAlias

import asyncpg

from duetime_infra.pg.dispatch.outbox import oldest_dispatch_age, reenqueue_stuck_runs

log = logging.getLogger(__name__)

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"


class Reconciler:
    def __init__(
        self,
        pool: Pool,
        *,
        after: timedelta,
        interval: float,
        batch_size: int = 500,
        max_per_pass: int = 5_000,
    ) -> None:
        self._pool = pool
        self._after = after
        self._interval = interval
        self._batch_size = batch_size
        self._max_per_pass = max_per_pass
        self.reenqueued = 0

    async def reconcile_once(self) -> int:
        """One pass; returns how many runs were re-enqueued."""
        async with self._pool.acquire() as conn:
            backlog = await oldest_dispatch_age(conn)
        if backlog is not None and backlog > self._after:
            log.warning(
                "reconcile deferred: the outbox is behind",
                extra={"action": "reconcile_deferred", "oldest_seconds": backlog.total_seconds()},
            )
            return 0
        total = 0
        while total < self._max_per_pass:
            limit = min(self._batch_size, self._max_per_pass - total)
            count = await reenqueue_stuck_runs(self._pool, self._after, limit)
            total += count
            if count < limit:
                break
        if total:
            log.info(
                "stuck runs re-enqueued",
                extra={"action": "runs_reenqueued", "count": total},
            )
        self.reenqueued += total
        return total

    async def run(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            try:
                await self.reconcile_once()
            except Exception:
                log.exception("reconcile pass failed", extra={"action": "reconcile_failed"})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), self._interval)
