"""What ListJobs and ListRuns decide: a page of jobs (with each one's latest runs and next
occurrences, marked where a calendar skips them, for list pages) or of runs, in a job or across
the team, narrowed by a filter."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import timedelta

from duetime_core.calendars import job_calendars
from duetime_core.errors import InvalidArgument, NotFound
from duetime_core.jobspec import JobState
from duetime_core.preview import PreviewItem, job_preview
from duetime_core.records import JobRecord, RunRecord, RunState
from duetime_infra.archive.reader import ArchiveReader
from duetime_infra.pg.jobs.reads import JobReads, Page
from duetime_infra.pg.jobs.store import JobStore

MAX_ACTIVITY = 10


@dataclass
class JobActivity:
    recent: list[RunRecord] = field(default_factory=list)
    upcoming: list[PreviewItem] = field(default_factory=list)


# A page whose jobs' activity is asked for: each job's previews are computed here.
MAX_ACTIVITY_PAGE = 100


def activity_count(value: int, name: str) -> int:
    if not 0 <= value <= MAX_ACTIVITY:
        raise InvalidArgument.field(name, f"must be between 0 and {MAX_ACTIVITY}")
    return value


def check_activity_page(page_size: int, recent: int, upcoming: int) -> None:
    if (recent or upcoming) and page_size > MAX_ACTIVITY_PAGE:
        raise InvalidArgument.field(
            "page_size", f"at most {MAX_ACTIVITY_PAGE} with recent_runs or upcoming_runs"
        )


class Lists:
    """With an archive, runs of the weeks it holds are read from it, merged with PostgreSQL's
    in the same order, so a page or a run reads the same wherever it lives."""

    def __init__(self, store: JobStore, archive: ArchiveReader | None = None) -> None:
        self._store = store
        self._reads: JobReads = store.reads
        self._archive = archive

    async def jobs(
        self, team_id: str, state: JobState | None, where: str, page: Page
    ) -> list[JobRecord]:
        return await self._reads.list_jobs(team_id, state, page, where)

    async def activity(
        self, jobs: list[JobRecord], recent: int, upcoming: int
    ) -> dict[uuid.UUID, JobActivity]:
        """Each job's latest ``recent`` runs and its next ``upcoming`` occurrences (for an
        ACTIVE job: from its pending one on, as the scheduler will claim them)."""
        found = {job.job_id: JobActivity() for job in jobs}
        if recent:
            runs = await self._reads.recent_runs([j.job_id for j in jobs], recent)
            for job_id, latest in runs.items():
                found[job_id].recent = latest
        if upcoming:
            # The page's calendars in one read (a page is one team's).
            names = {name for job in jobs for name in job.spec.excluded_calendars}
            known = await self._store.calendars_named(jobs[0].team_id, names) if names else {}
            for job in jobs:
                if job.state is JobState.ACTIVE and job.next_run_time is not None:
                    start = job.next_run_time - timedelta(microseconds=1)
                    made = job.scheduled_runs
                    calendars = job_calendars(job.spec.excluded_calendars, known)
                    items = job_preview(job.job_id, job.spec, made, start, upcoming, calendars)
                    found[job.job_id].upcoming = items
        return found

    async def runs(
        self,
        team_id: str,
        job_id: uuid.UUID | None,
        state: RunState | None,
        where: str,
        page: Page,
    ) -> list[RunRecord]:
        runs = await self._reads.list_runs(team_id, job_id, state, page, where)
        if self._archive is None:
            return runs
        # A full page from PostgreSQL: only archived runs at or before its last can displace.
        older_than = runs[-1].key.nominal_time if len(runs) == page.limit else None
        archived = await self._archive.list_runs(team_id, job_id, state, where, page, older_than)
        if not archived:
            return runs
        merged = sorted(
            [*runs, *archived], key=lambda r: (r.key.nominal_time, r.run_id.bytes), reverse=True
        )
        return merged[: page.limit]

    async def run(self, team_id: str, job_id: uuid.UUID, run_id: uuid.UUID) -> RunRecord:
        try:
            return await self._store.get_run(team_id, job_id, run_id)
        except NotFound:
            if self._archive is None:
                raise
            archived = await self._archive.get_run(team_id, job_id, run_id)
            if archived is None:
                raise
            return archived
