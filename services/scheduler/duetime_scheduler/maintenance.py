"""Run-history partitions: created ahead and dropped past retention by the owner of partition 0;
with an archive configured, archived first by a child process (``duetime_scheduler.archive``).
The same hourly pass drops workers' beat records that no open attempt needs, and teams'
signing keys retired long enough ago that no token they signed still verifies.

Exactly one scheduler owns partition 0 at a time, so one runs the maintenance; it is idempotent,
so an overlap during a handover costs a wasted call and nothing else (two archiving passes never
run at once: each holds the archive's advisory lock).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence

import asyncpg

from duetime_infra.archive.archiver import Outcome, PassResult
from duetime_infra.archive.settings import ArchiveSettings
from duetime_infra.pg.fencing import FencingToken
from duetime_infra.pg.sql import q
from duetime_infra.pg.teams.signing_keys import prune_retired_keys
from duetime_infra.telemetry import instruments

log = logging.getLogger(__name__)

ARCHIVE_COMMAND = (sys.executable, "-m", "duetime_scheduler.archive")
RESULT_MARKER = "DUETIME_ARCHIVE_RESULT="


class ArchivePasses:
    """Starts an archiving pass as a child process unless one is running, and records what
    it reports (``instruments.archive_*``); the claim loop never waits for it."""

    def __init__(
        self,
        command: Sequence[str] = ARCHIVE_COMMAND,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._command = list(command)
        self._environ = dict(os.environ if environ is None else environ)
        self._task: asyncio.Task[PassResult | None] | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._closing = False

    def start(self) -> bool:
        """Starts a pass; False if the last one is still running."""
        if self._task is not None and not self._task.done():
            return False
        self._task = asyncio.create_task(self._pass())
        return True

    async def wait(self) -> PassResult | None:
        """The running (or last) pass's result; None if it ended without one."""
        return None if self._task is None else await self._task

    async def close(self) -> None:
        """Ends a running pass (it resumes where it was, at the next pass)."""
        self._closing = True
        if self._process is not None and self._process.returncode is None:
            self._process.terminate()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _pass(self) -> PassResult | None:
        self._process = await asyncio.create_subprocess_exec(
            *self._command,
            env=self._environ,
            stdout=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL,
        )
        if self._closing:  # closed while the process was being started
            self._process.terminate()
        out, _ = await self._process.communicate()
        result = _result(out.decode(errors="replace"))
        if result is None and self._closing:
            log.info("archiving pass ended with the scheduler", extra={"action": "archive_ended"})
            return None
        if result is None:
            log.error(
                "archiving pass ended without a result (exit %s)",
                self._process.returncode,
                extra={"action": "archive_crashed", "exit": self._process.returncode},
            )
            instruments.archive_week(Outcome.FAILED, "crashed", 0)
            return None
        record_pass(result)
        return result


def record_pass(result: PassResult) -> None:
    """What a pass did, as metrics: each week's outcome, each failure (the alert), the weeks
    still pending."""
    for week in result.weeks:
        instruments.archive_week(week.outcome, week.reason, week.runs)
    if not result.busy:
        instruments.archive_pending(result.pending)


def _result(output: str) -> PassResult | None:
    for line in output.splitlines():
        if line.startswith(RESULT_MARKER):
            with contextlib.suppress(ValueError, KeyError, TypeError):
                return PassResult.from_json(line.removeprefix(RESULT_MARKER))
    return None


class PartitionMaintenance:
    def __init__(
        self,
        interval_seconds: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
        archive: ArchiveSettings | None = None,
        passes: ArchivePasses | None = None,
    ) -> None:
        # Hourly is plenty: partitions are weekly and created four weeks ahead.
        self._interval = interval_seconds
        self._clock = clock
        self._last = float("-inf")
        self._archive = archive
        self.passes = passes or ArchivePasses()

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
            if self._archive is not None:
                # Before maintenance runs: with the policy stored it drops no history.
                await conn.execute(q("archive_policy_set"), self._archive.hot_retention)
            await conn.execute(q("maintain_partitions"))
            await conn.execute(q("worker_beats_prune"))
            pruned = await prune_retired_keys(conn)
        # Apart: maintenance may hold the runs table locked until its commit.
        await pool.execute(q("claim_tokens_prune"))
        if pruned:
            log.info(
                "retired signing keys deleted",
                extra={"action": "signing_keys_pruned", "keys": pruned},
            )
        if self._archive is not None:
            self.passes.start()
        return 1

    async def close(self) -> None:
        await self.passes.close()
