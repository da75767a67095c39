"""Jobs and runs as lists read them: pages in a team or a job, narrowed by a filter
(``duetime_infra.pg.filters``), each job's latest runs, and the sets a batch acts on."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeAlias

import asyncpg

from duetime_core.errors import NotFound
from duetime_core.jobspec import JobState
from duetime_core.records import JobRecord, RunRecord, RunState
from duetime_infra.pg.filters import JOBS, RUNS, with_filter
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.rows import job_from_row, run_from_row
from duetime_infra.pg.sql import q

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"


@dataclass(frozen=True)
class Page:
    """Where a page starts (after the last item of the one before) and how long it is."""

    after_time: datetime | None
    after_id: uuid.UUID | None
    limit: int


def not_found(what: str) -> NotFound:
    """A job or run that is missing or another team's: the same answer either way."""
    return NotFound(f"{what} not found", reason=f"{what.upper()}_NOT_FOUND")


async def with_attempts(conn: Conn | Pool, rows: Sequence[asyncpg.Record]) -> list[RunRecord]:
    """The runs of ``rows`` with their attempts, in one more statement."""
    if not rows:
        return []
    attempt_rows = await conn.fetch(
        q("attempts_of_runs"),
        [r["run_id"] for r in rows],
        [r["nominal_time"] for r in rows],
    )
    by_run: dict[uuid.UUID, list[Any]] = defaultdict(list)
    for a in attempt_rows:
        by_run[a["run_id"]].append(a)
    return [run_from_row(r, by_run[r["run_id"]]) for r in rows]


class JobReads:
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def list_jobs(
        self, team_id: str, state: JobState | None, page: Page, where: str = ""
    ) -> list[JobRecord]:
        fragment, params = JOBS.where(where, first=6)
        rows = await self._pool.fetch(
            with_filter(q("job_list"), fragment),
            team_id,
            state.value if state else None,
            page.after_time,
            page.after_id,
            page.limit,
            *params,
        )
        return [job_from_row(r) for r in rows]

    async def list_runs(
        self,
        team_id: str,
        job_id: uuid.UUID | None,
        state: RunState | None,
        page: Page,
        where: str = "",
    ) -> list[RunRecord]:
        """A page of one job's runs, or (``job_id`` None) of every job of the team's."""
        fragment, params = RUNS.where(where, first=6)
        if job_id is not None:
            await self._require_owned(team_id, job_id)
        query = q("run_list") if job_id is not None else q("run_list_team")
        rows = await self._pool.fetch(
            with_filter(query, fragment),
            job_id if job_id is not None else team_id,
            state.value if state else None,
            page.after_time,
            page.after_id,
            page.limit,
            *params,
        )
        return await with_attempts(self._pool, rows)

    async def recent_runs(
        self, job_ids: Sequence[uuid.UUID], count: int
    ) -> dict[uuid.UUID, list[RunRecord]]:
        """Each job's latest ``count`` runs, latest first."""
        found: dict[uuid.UUID, list[RunRecord]] = {job_id: [] for job_id in job_ids}
        if not job_ids or count <= 0:
            return found
        rows = await self._pool.fetch(q("runs_recent_of_jobs"), list(job_ids), count)
        for run in await with_attempts(self._pool, rows):
            found[run.key.job_id].append(run)
        for runs in found.values():
            runs.sort(key=lambda r: (r.key.nominal_time, r.run_id), reverse=True)
        return found

    async def matching_jobs(
        self, team_id: str, where: str, limit: int, state: JobState | None = None
    ) -> list[uuid.UUID]:
        """The team's jobs (not deleted; in ``state``, if given) a ListJobs filter matches, at
        most ``limit``."""
        fragment, params = JOBS.where(where, first=4)
        rows = await self._pool.fetch(
            with_filter(q("job_ids_matching"), fragment),
            team_id,
            limit,
            state.value if state else None,
            *params,
        )
        return [r["job_id"] for r in rows]

    async def matching_dead_letters(
        self, team_id: str, job_id: uuid.UUID | None, where: str, limit: int
    ) -> list[tuple[uuid.UUID, uuid.UUID]]:
        """(job id, run id) of the DEAD_LETTERED runs a ListRuns filter matches, of one job or
        of the team's, at most ``limit``."""
        if job_id is not None:
            await self._require_owned(team_id, job_id)
        fragment, params = RUNS.where(where, first=4)
        rows = await self._pool.fetch(
            with_filter(q("run_dead_letters_matching"), fragment),
            team_id,
            job_id,
            limit,
            *params,
        )
        return [(r["job_id"], r["run_id"]) for r in rows]

    async def _require_owned(self, team_id: str, job_id: uuid.UUID) -> None:
        if await self._pool.fetchval(q("job_owned"), job_id, team_id) is None:
            raise not_found("job")
