"""A team's calendars on PostgreSQL: JobService's calendar calls, the check that the calendars a
job names exist, and the claim's read of a batch's calendars.

A calendar still named by a job that is not deleted cannot be deleted (FAILED_PRECONDITION,
CALENDAR_IN_USE, naming the jobs). Writing a job takes a KEY SHARE lock on the calendars it
names and a delete locks the calendar's row before it looks for jobs, so the two never cross:
a job is never left naming a calendar that is gone.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TypeAlias

import asyncpg

from duetime_core.calendars import CalendarRecord, CalendarRules
from duetime_core.errors import (
    Aborted,
    AlreadyExists,
    FailedPrecondition,
    FieldViolation,
    InvalidArgument,
    NotFound,
)
from duetime_infra.codec.calendar_codec import rules_from_json, rules_to_json
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.sql import q

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"

# The jobs a CALENDAR_IN_USE error or a calendar's answer names, at most.
MAX_NAMED_JOBS = 100
# A team's calendars, at most: ListCalendars answers them all, without pages.
MAX_TEAM_CALENDARS = 500


def _record(row: asyncpg.Record, used_by: Sequence[str] = ()) -> CalendarRecord:
    return CalendarRecord(
        team_id=row["team_id"],
        calendar_id=row["calendar_id"],
        rules=rules_from_json(row["rules"]),
        version=row["version"],
        create_time=row["create_time"],
        update_time=row["update_time"],
        used_by=tuple(used_by),
    )


def _not_found(calendar_id: str) -> NotFound:
    return NotFound(f"calendar {calendar_id!r} not found", reason="CALENDAR_NOT_FOUND")


def _check_etag(record: CalendarRecord, etag: str) -> None:
    if etag and etag != record.etag:
        raise Aborted(
            "the calendar changed since this etag was read; read it again",
            reason="ETAG_MISMATCH",
            metadata={"current_etag": record.etag},
        )


async def _jobs_naming(conn: Conn | Pool, team_id: str, calendar_id: str) -> list[str]:
    rows = await conn.fetch(q("calendar_jobs"), team_id, calendar_id, MAX_NAMED_JOBS)
    return [f"teams/{team_id}/jobs/{r['job_id']}" for r in rows]


class CalendarStore:
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def create(self, team_id: str, calendar_id: str, rules: CalendarRules) -> CalendarRecord:
        row = await self._pool.fetchrow(
            q("calendar_insert"), team_id, calendar_id, rules_to_json(rules), MAX_TEAM_CALENDARS
        )
        if row is not None:
            return _record(row)
        if await self._pool.fetchrow(q("calendar_get"), team_id, calendar_id) is not None:
            raise AlreadyExists(
                f"the team already has a calendar {calendar_id!r}",
                reason="CALENDAR_ALREADY_EXISTS",
            )
        raise FailedPrecondition(
            f"the team has {MAX_TEAM_CALENDARS} calendars, the most it may: delete one first",
            reason="CALENDARS_FULL",
        )

    async def get(self, team_id: str, calendar_id: str) -> CalendarRecord:
        row = await self._pool.fetchrow(q("calendar_get"), team_id, calendar_id)
        if row is None:
            raise _not_found(calendar_id)
        return _record(row, await _jobs_naming(self._pool, team_id, calendar_id))

    async def list_calendars(self, team_id: str) -> list[CalendarRecord]:
        return [_record(r) for r in await self._pool.fetch(q("calendar_list"), team_id)]

    async def update(
        self, team_id: str, calendar_id: str, rules: CalendarRules, etag: str
    ) -> CalendarRecord:
        async with self._pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(q("calendar_get_for_update"), team_id, calendar_id)
            if row is None:
                raise _not_found(calendar_id)
            _check_etag(_record(row), etag)
            written = await conn.fetchrow(
                q("calendar_write"), team_id, calendar_id, rules_to_json(rules)
            )
        assert written is not None
        return _record(written)

    async def delete(self, team_id: str, calendar_id: str, etag: str) -> None:
        async with self._pool.acquire() as conn, conn.transaction():
            # Locked first: a job being written that names it is committed before we look.
            row = await conn.fetchrow(q("calendar_get_for_update"), team_id, calendar_id)
            if row is None:
                raise _not_found(calendar_id)
            _check_etag(_record(row), etag)
            jobs = await _jobs_naming(conn, team_id, calendar_id)
            if jobs:
                raise FailedPrecondition(
                    f"calendar {calendar_id!r} is excluded by {len(jobs)} job(s): "
                    f"{', '.join(jobs)}; take it out of their excluded_calendars first",
                    reason="CALENDAR_IN_USE",
                    metadata={"jobs": ",".join(jobs)},
                )
            await conn.execute(q("calendar_delete"), team_id, calendar_id)


async def check_calendars_exist(
    conn: Conn, team_id: str, names: Sequence[str], field: str = "job.excluded_calendars"
) -> None:
    """INVALID_ARGUMENT naming each of ``names`` the team has no calendar of; the others stay
    locked (KEY SHARE) until the caller's transaction ends, so none is deleted meanwhile."""
    if not names:
        return
    rows = await conn.fetch(q("calendars_named_share"), team_id, list(names))
    found = {r["calendar_id"] for r in rows}
    missing = [
        FieldViolation(f"{field}[{i}]", f"the team has no calendar {name!r}")
        for i, name in enumerate(names)
        if name not in found
    ]
    if missing:
        raise InvalidArgument(missing)


async def calendars_of(
    conn: Conn | Pool, wanted: Collection[tuple[str, str]]
) -> dict[tuple[str, str], CalendarRules]:
    """The rules of the calendars ``wanted``, by (team, calendar id), in one statement; a pair
    with no calendar is absent."""
    if not wanted:
        return {}
    pairs = list(wanted)
    rows = await conn.fetch(
        q("claim_calendars"), [team for team, _ in pairs], [name for _, name in pairs]
    )
    return {(r["team_id"], r["calendar_id"]): rules_from_json(r["rules"]) for r in rows}
