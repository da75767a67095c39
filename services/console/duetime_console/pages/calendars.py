"""The team's calendars (ListCalendars) and one calendar with the jobs that exclude it
(GetCalendar); they are created and changed with the CLI or the API (docs/calendars.md)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from duetime.jobs.v1 import calendar_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime_console.session import TEAM
from duetime_console.web import Viewer, page


def weekdays(calendar: calendar_pb2.Calendar) -> str:
    names = (calendar_pb2.CalendarWeekday.Name(w) for w in calendar.weekdays)
    return ", ".join(n.removeprefix("CALENDAR_WEEKDAY_").capitalize() for n in names)


@page(TEAM)
async def calendars_list(request: Request, viewer: Viewer) -> Response:
    found = await viewer.call(viewer.api.jobs.ListCalendars, svc.ListCalendarsRequest())
    return viewer.render(
        "calendars.html", {"calendars": list(found.calendars), "weekdays": weekdays}
    )


@page(TEAM)
async def calendar_detail(request: Request, viewer: Viewer) -> Response:
    calendar_id = request.path_params["calendar_id"]
    name = f"teams/{viewer.session.team}/calendars/{calendar_id}"
    found = await viewer.call(viewer.api.jobs.GetCalendar, svc.GetCalendarRequest(name=name))
    return viewer.render("calendar.html", {"calendar": found.calendar, "weekdays": weekdays})


routes = [
    Route("/calendars", calendars_list, methods=["GET"]),
    Route("/calendars/{calendar_id}", calendar_detail, methods=["GET"]),
]
