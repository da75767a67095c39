"""Jobs and runs as lists read them: pages in a team or a job, narrowed by a filter
(``duetime_infra.pg.jobs.filters``), each job's latest runs, and the sets a batch acts on."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeAlias

import asyncpg

from duetime_core.errors import NotFound
from duetime_core.explain import Facts, VersionAt
from duetime_core.history import VersionRecord
from duetime_core.jobspec import JobState
from duetime_core.records import JobRecord, RunRecord, RunState
from duetime_infra.codec.spec_json import spec_from_json
from duetime_infra.pg.jobs.filters import JOBS, RUNS, with_filter
from duetime_infra.pg.jobs.rows import job_from_row, run_from_row, version_from_row
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.sql import q

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"


@dataclass(frozen=True)
class Page:
    """Where a page starts (after the last item of the one before) and how long it is."""

    after_time: datetime | None
    after_id: uuid.UUID | None
    limit: int


def _one(row: asyncpg.Record | None) -> asyncpg.Record:
    # Every job has its first version from its creation on.
    assert row is not None
    return row


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


def _version_at(row: asyncpg.Record) -> VersionAt:
    return VersionAt(row["version"], spec_from_json(row["spec"]), row["create_time"])


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

    async def occurrence_facts(self, job_id: uuid.UUID, instant: datetime) -> Facts:
        """The record at ``instant`` (or the latest range record reaching it), with its
        attempts and its version, the latest backfilled run at it, and the version in force at
        ``instant``: at most five index lookups, however many runs the job has."""
        async with self._pool.acquire() as conn:
            row = await conn.fetchrow(q("run_scheduled_at"), job_id, instant)
            if row is None:
                row = await conn.fetchrow(q("run_range_reaching"), job_id, instant)
            version = _version_at(_one(await conn.fetchrow(q("version_at"), job_id, instant)))
            again = await conn.fetchrow(q("run_backfilled_at"), job_id, instant)
            backfill = (await with_attempts(conn, [again]))[0] if again is not None else None
            if row is None:
                return Facts(instant, None, None, version, backfill)
            record = (await with_attempts(conn, [row]))[0]
            record_version = version
            if row["job_version"] != version.version:
                found = await conn.fetchrow(q("version_get"), job_id, row["job_version"])
                record_version = _version_at(found) if found is not None else version
            return Facts(instant, record, record_version, version, backfill)

    async def list_versions(
        self, team_id: str, job_id: uuid.UUID, before: int | None, limit: int
    ) -> list[VersionRecord]:
        """The job's versions older than ``before`` (None: from the newest), newest first,
        ``limit`` of them and the one after (the page's next, or the last one's predecessor).
        A deleted job's too."""
        await self._require_owned(team_id, job_id)
        rows = await self._pool.fetch(q("version_list"), job_id, before, limit)
        return [version_from_row(job_id, team_id, r) for r in rows]

    async def _require_owned(self, team_id: str, job_id: uuid.UUID) -> None:
        if await self._pool.fetchval(q("job_owned"), job_id, team_id) is None:
            raise not_found("job")
