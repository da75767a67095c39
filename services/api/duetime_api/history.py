"""What ExplainOccurrence and ListJobVersions decide: an occurrence's fate from the job's
records and versions (the rules are core's, ``duetime_core.explain``), and a page of the job's
versions with the fields each changed."""

from __future__ import annotations

import uuid

from duetime_core.errors import InvalidArgument
from duetime_core.explain import Asked, Explanation, explain, read_asked
from duetime_core.history import VersionRecord, spec_changes
from duetime_core.jobspec import instant_problem
from duetime_core.preview import zone_of
from duetime_infra.pg.jobs.store import JobStore


class History:
    def __init__(self, store: JobStore) -> None:
        self._store = store
        self._reads = store.reads

    async def explain(self, team_id: str, job_id: uuid.UUID, asked: Asked) -> Explanation:
        """The fate of the occurrence at the time ``asked``, from the job's records and
        versions."""
        record = await self._store.get_job(team_id, job_id)
        field = "time" if asked.instant is not None else "local_time"
        try:
            reading = read_asked(asked, zone_of(record.spec.schedule))
        except ValueError as error:
            raise InvalidArgument.field(field, str(error)) from None
        for instant in reading.instants:
            problem = instant_problem(instant)
            if problem is not None:
                raise InvalidArgument.field(field, problem)
        facts = [await self._reads.occurrence_facts(job_id, t) for t in reading.instants]
        calendars = await self._store.calendars_for(team_id, record.spec)
        return explain(record, reading, facts, await self._store.now(), calendars)

    async def versions(
        self, team_id: str, job_id: uuid.UUID, before: int | None, limit: int
    ) -> tuple[list[tuple[VersionRecord, list[str]]], int | None]:
        """A page of the job's versions, newest first, each with the fields it changed, and
        the version the next page starts below (None: the last page)."""
        rows = await self._reads.list_versions(team_id, job_id, before, limit)
        page, rest = rows[:limit], rows[limit:]
        shown = []
        for version, older in zip(page, [*page[1:], *rest, None], strict=False):
            if version.change is not None:
                changed = list(version.change.fields)
            elif older is not None:
                changed = spec_changes(older.spec, version.spec, sealed_comparable=False)
            else:
                changed = []
            shown.append((version, changed))
        return shown, page[-1].version if rest else None
