"""Archived runs as the API reads them: the weeks PostgreSQL records archived, each one's
Parquet object scanned with the request's filter pushed down (the objects are sorted by team,
job and nominal time, so row-group statistics skip all but the team's or the job's rows).

Reads run in a thread (pyarrow releases the GIL), never on the event loop. An object's
footer is read once and kept: archived objects never change.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.fs as pafs

from duetime_core.errors import FailedPrecondition, Unavailable
from duetime_core.records import AttemptOutcome, AttemptRecord, RunReason, RunRecord, RunState
from duetime_core.runkey import RunKey
from duetime_infra.archive import objects
from duetime_infra.archive.filters import Expression, run_filter
from duetime_infra.archive.layout import SCHEMA, SCHEMA_VERSION
from duetime_infra.archive.settings import ArchiveSettings
from duetime_infra.pg.jobs.reads import Page
from duetime_infra.pg.sql import q

_TIME = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True)
class ArchivedWeek:
    start: datetime
    end: datetime
    key: str


class ArchiveReader:
    def __init__(
        self,
        pool: asyncpg.Pool[asyncpg.Record],
        settings: ArchiveSettings,
        s3: pafs.FileSystem | None = None,
    ) -> None:
        self._pool = pool
        self._settings = settings
        self._s3 = s3 if s3 is not None else objects.filesystem(settings)
        self._datasets: dict[str, pads.Dataset] = {}

    async def weeks(self) -> list[ArchivedWeek]:
        """The archived weeks, latest first."""
        rows = await self._pool.fetch(q("archive_weeks_archived"))
        for r in rows:
            if r["schema_version"] != SCHEMA_VERSION:
                raise FailedPrecondition(
                    f"archived week {r['week_start']} has schema version {r['schema_version']}; "
                    f"this build reads {SCHEMA_VERSION}",
                    reason="ARCHIVE_SCHEMA_VERSION",
                )
        return [
            ArchivedWeek(r["week_start"], r["week_end"], self._settings.key(r["object_key"]))
            for r in rows
        ]

    async def warm(self) -> None:
        """Reads the footer of every archived week not read yet, so that a request does not
        wait for it (the API calls this periodically)."""
        fresh = [w.key for w in await self.weeks() if w.key not in self._datasets]
        for key in fresh:
            await asyncio.to_thread(self._dataset, key)

    async def list_runs(
        self,
        team_id: str,
        job_id: uuid.UUID | None,
        state: RunState | None,
        where: str,
        page: Page,
        older_than: datetime | None = None,
    ) -> list[RunRecord]:
        """A page of the archived runs of a job (or the team's), latest first, after the
        page's position; ``older_than``: only rows at or before it can make the caller's page
        (weeks ending before it are skipped)."""
        weeks = await self.weeks()
        if page.after_time is not None:
            weeks = [w for w in weeks if w.start <= page.after_time]
        if older_than is not None:
            weeks = [w for w in weeks if w.end > older_than]
        if not weeks:
            return []
        wanted = _scope(team_id, job_id, state, where)
        if page.after_time is not None and page.after_id is not None:
            wanted &= _after(page.after_time, page.after_id)
        table = await self._read(weeks, wanted, page.limit)
        return [run_from_archive(row) for row in table.to_pylist()]

    async def get_run(self, team_id: str, job_id: uuid.UUID, run_id: uuid.UUID) -> RunRecord | None:
        weeks = await self.weeks()
        if not weeks:
            return None
        wanted = _scope(team_id, job_id, None, "") & (pc.field("run_id") == str(run_id))
        table = await self._read(weeks, wanted, 1)
        rows = table.to_pylist()
        return run_from_archive(rows[0]) if rows else None

    async def _read(self, weeks: list[ArchivedWeek], wanted: Expression, limit: int) -> pa.Table:
        try:
            return await asyncio.to_thread(self._latest, weeks, wanted, limit)
        except OSError as error:
            # The object store unreachable or refusing: the caller may try again.
            raise Unavailable(
                f"archived run history cannot be read now: {error}", reason="ARCHIVE_UNAVAILABLE"
            ) from error

    def _latest(self, weeks: list[ArchivedWeek], wanted: Expression, limit: int) -> pa.Table:
        """The ``limit`` latest rows ``wanted`` matches, reading weeks latest first until
        enough are found (the weeks do not overlap)."""
        found: list[pa.Table] = []
        count = 0
        for week in weeks:
            table = self._dataset(week.key).to_table(filter=wanted)
            if table.num_rows:
                found.append(table)
                count += table.num_rows
            if count >= limit:
                break
        if not found:
            return _empty()
        table = pa.concat_tables(found)
        order = [("nominal_time", "descending"), ("run_id", "descending")]
        return table.sort_by(order).slice(0, limit)

    def _dataset(self, key: str) -> pads.Dataset:
        dataset = self._datasets.get(key)
        if dataset is None:
            dataset = pads.dataset(key, filesystem=self._s3, format="parquet")
            for fragment in dataset.get_fragments():
                fragment.ensure_complete_metadata()
            self._datasets[key] = dataset
        return dataset


def _empty() -> pa.Table:
    return SCHEMA.empty_table()


def _scope(
    team_id: str, job_id: uuid.UUID | None, state: RunState | None, where: str
) -> Expression:
    wanted = pc.field("team_id") == team_id
    if job_id is not None:
        wanted &= pc.field("job_id") == str(job_id)
    if state is not None:
        wanted &= pc.field("state") == state.value
    matched = run_filter(where)
    return wanted if matched is None else wanted & matched


def _after(after_time: datetime, after_id: uuid.UUID) -> Expression:
    """(nominal_time, run_id) < (after_time, after_id), as the SQL's row comparison; run ids
    compare as their canonical text, in the byte order PostgreSQL uses for uuid."""
    at = pa.scalar(after_time, _TIME)
    nominal = pc.field("nominal_time")
    return (nominal < at) | ((nominal == at) & (pc.field("run_id") < str(after_id)))


def run_from_archive(row: dict[str, Any]) -> RunRecord:
    return RunRecord(
        run_id=uuid.UUID(row["run_id"]),
        key=RunKey(uuid.UUID(row["job_id"]), row["nominal_time"], row["origin"]),
        team_id=row["team_id"],
        effective_time=row["effective_time"],
        state=RunState(row["state"]),
        reason=RunReason(row["reason"]),
        reason_detail=row["reason_detail"],
        attempt=row["attempt"],
        next_attempt_time=row["next_attempt_time"],
        first_start_time=row["first_start_time"],
        range_end_time=row["range_end_time"],
        occurrence_count=row["occurrence_count"],
        trace_id=row["trace_id"],
        create_time=row["create_time"],
        update_time=row["update_time"],
        attempts=tuple(_attempt(a) for a in row["attempts"] or ()),
        quota_release_time=row["eligible_time"],
        quota_limit=row["quota_limit"],
    )


def _attempt(a: dict[str, Any]) -> AttemptRecord:
    return AttemptRecord(
        number=a["number"],
        worker_id=a["worker_id"],
        start_time=a["start_time"],
        lease_expire_time=a["lease_expire_time"],
        end_time=a["end_time"],
        outcome=AttemptOutcome(a["outcome"]) if a["outcome"] else None,
        error=a["error"],
    )
