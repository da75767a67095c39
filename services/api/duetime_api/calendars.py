"""JobService's calendar calls: a team's calendars, decoded, stored and answered."""

from __future__ import annotations

from duetime.jobs.v1 import calendar_pb2, job_service_pb2
from duetime_api.names import parse_calendar_name
from duetime_core.errors import InvalidArgument
from duetime_infra.codec.calendar_codec import check_calendar_id, decode_calendar, encode_calendar
from duetime_infra.pg.teams.calendars import CalendarStore


class CalendarCalls:
    def __init__(self, store: CalendarStore) -> None:
        self._store = store

    async def create(
        self, team_id: str, request: job_service_pb2.CreateCalendarRequest
    ) -> calendar_pb2.Calendar:
        if not request.HasField("calendar"):
            raise InvalidArgument.field("calendar", "required")
        calendar_id = check_calendar_id(request.calendar.calendar_id, "calendar.calendar_id")
        rules = decode_calendar(request.calendar)
        return encode_calendar(await self._store.create(team_id, calendar_id, rules))

    async def get(self, team_id: str, name: str) -> calendar_pb2.Calendar:
        calendar_id = parse_calendar_name(name, team_id)
        return encode_calendar(await self._store.get(team_id, calendar_id))

    async def list_calendars(self, team_id: str) -> list[calendar_pb2.Calendar]:
        return [encode_calendar(r) for r in await self._store.list_calendars(team_id)]

    async def update(
        self, team_id: str, request: job_service_pb2.UpdateCalendarRequest
    ) -> calendar_pb2.Calendar:
        if not request.HasField("calendar"):
            raise InvalidArgument.field("calendar", "required")
        calendar_id = parse_calendar_name(request.calendar.name, team_id, "calendar.name")
        written = request.calendar.calendar_id
        if written and written != calendar_id:
            raise InvalidArgument.field(
                "calendar.calendar_id", "a calendar's id cannot change: create another"
            )
        rules = decode_calendar(request.calendar)
        record = await self._store.update(team_id, calendar_id, rules, request.calendar.etag)
        return encode_calendar(record)

    async def delete(self, team_id: str, name: str, etag: str) -> None:
        await self._store.delete(team_id, parse_calendar_name(name, team_id), etag)
