"""Attempts on PostgreSQL: starting runs, renewing leases, reporting how attempts ended.

A start or a report goes one way, in batches (a single one is a batch of one): a trying pass
decides what it can without waiting for another transaction's locks, then what it left out
goes through the same pass in its waiting mode, one entry at a time (``starts``,
``reports``). The decisions are ``duetime_core.attempts``'; these modules read the facts and
write the answers.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import TypeVar

from duetime_core.attempts import ATTEMPT_CLOSED, JOB_DELETED, JOB_PAUSED, AttemptSettings
from duetime_core.errors import DuetimeError, Unavailable
from duetime_infra.pg.attempts.outcome import transaction
from duetime_infra.pg.attempts.reports import Reports
from duetime_infra.pg.attempts.results import (
    AttemptRef,
    CompleteResult,
    Directive,
    HeartbeatResult,
    Pool,
    Rand,
    Report,
    StartRequest,
    StartResult,
)
from duetime_infra.pg.attempts.starts import Starts
from duetime_infra.pg.dispatch.spec_cache import SpecCache
from duetime_infra.pg.pool import generic_plans
from duetime_infra.pg.sql import q
from duetime_infra.telemetry import instruments

log = logging.getLogger(__name__)

MAX_BATCH = 1000
# Entries a trying pass left out go through waiting passes side by side, each on its own
# connection.
WAITING_CONCURRENCY = 4

T = TypeVar("T")
R = TypeVar("R")
# One pass over entries, trying (False) or waiting (True): its answers by entry index.
Pass = Callable[[Sequence[T], bool], Awaitable[Mapping[int, R]]]


class AttemptStore:
    def __init__(
        self,
        pool: Pool,
        settings: AttemptSettings,
        rand: Rand = random.random,
        specs: SpecCache | None = None,
    ) -> None:
        self._pool = pool
        self._settings = settings
        # The scheduler shares its claimer's: the runs a herd starts were claimed seconds ago,
        # their definitions decoded then.
        specs = specs or SpecCache()
        self._starts = Starts(pool, settings, specs)
        self._reports = Reports(pool, specs, rand)

    @property
    def pool(self) -> Pool:
        return self._pool

    @property
    def settings(self) -> AttemptSettings:
        return self._settings

    async def start_many(
        self, requests: Sequence[StartRequest]
    ) -> list[StartResult | DuetimeError]:
        """One answer per start, in order."""
        return await _in_passes(self._starts.run, requests, "start")

    async def complete_many(self, reports: Sequence[Report]) -> list[CompleteResult | DuetimeError]:
        """One answer per report, in order."""
        return await _in_passes(self._reports.run, reports, "complete")

    async def heartbeat(
        self, worker_id: str, refs: Sequence[AttemptRef], incarnation: str = ""
    ) -> HeartbeatResult:
        """Renews the listed attempts in one statement; one directive per attempt, in order.
        ``incarnation`` (the worker process's; empty: none said) holds the early attempts
        that process started by its record instead of a renewal each (``attempt_heartbeat``)."""
        if not refs:
            async with self._pool.acquire() as conn:
                now: datetime = await conn.fetchval(q("db_now"))
            return HeartbeatResult(now, [])
        async with transaction(self._pool) as conn:
            await generic_plans(conn)
            rows = await conn.fetch(
                q("attempt_heartbeat"),
                [r.run_id for r in refs],
                [r.number for r in refs],
                worker_id,
                self._settings.lease,
                [r.call.value if r.call is not None else None for r in refs],
                incarnation,
                [r.nominal_time for r in refs],
            )
        directives: list[Directive] = []
        for ref, row in zip(refs, rows, strict=True):
            if row["lease_expire_time"] is not None:
                directives.append(Directive(ref, False, row["lease_expire_time"]))
            elif not row["open"]:
                directives.append(Directive(ref, True, None, ATTEMPT_CLOSED))
            elif row["cancel_reason"]:
                directives.append(Directive(ref, True, None, row["cancel_reason"]))
            elif row["job_deleted"]:
                directives.append(Directive(ref, True, None, JOB_DELETED))
            elif row["job_paused"]:
                directives.append(Directive(ref, True, None, JOB_PAUSED))
            else:  # closed between the statement's read and its renewal
                directives.append(Directive(ref, True, None, ATTEMPT_CLOSED))
        # Beats for attempts the reaper closed are fenced out (a frozen worker that woke up);
        # one crossing this worker's own report of the attempt is not a refusal.
        instruments.fencing_refused("heartbeat", "attempt", sum(1 for r in rows if r["reaped"]))
        return HeartbeatResult(rows[0]["now"], directives)


async def _in_passes(
    one_pass: Pass[T, R | DuetimeError], entries: Sequence[T], what: str
) -> list[R | DuetimeError]:
    """A trying pass over all the entries, then a waiting pass for each one it left out. A
    trying pass whose transaction failed (a statement timeout, a serialization failure) decided
    nothing: every entry then waits, so one slow statement does not fail hundreds at once."""
    answers: dict[int, R | DuetimeError] = {}
    if entries:
        try:
            answers = dict(await one_pass(entries, False))
        except Unavailable as error:
            log.warning(
                "batch transaction failed; its entries go one by one",
                extra={
                    "action": "attempt_batch_failed",
                    "operation": what,
                    "entries": len(entries),
                    "error": repr(error.__cause__),
                },
            )
    limit = asyncio.Semaphore(WAITING_CONCURRENCY)

    async def waiting(i: int) -> None:
        async with limit:
            try:
                answers[i] = (await one_pass([entries[i]], True))[0]
            except DuetimeError as error:
                answers[i] = error

    await asyncio.gather(*(waiting(i) for i in range(len(entries)) if i not in answers))
    return [answers[i] for i in range(len(entries))]
