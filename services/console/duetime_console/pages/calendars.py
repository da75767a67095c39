"""The team's calendars (ListCalendars), one calendar with the jobs that exclude it
(GetCalendar), and the forms that create, change (with the etag it was read at) and delete
one (docs/calendars.md). A delete the API refuses while jobs exclude the calendar shows them."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from duetime.jobs.v1 import calendar_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime_console.api import ApiError
from duetime_console.calendarform import WEEKDAYS, CalendarForm
from duetime_console.session import TEAM
from duetime_console.times import zone_names
from duetime_console.web import Viewer, form_text, page, problems_of

# The create form's path: `_` is in no calendar id, so no calendar's page is hidden by it.
NEW = "/calendars/_new"
# What the API may refuse a calendar for, shown on the form with the fields it names.
_FORM_REFUSALS = ("INVALID_ARGUMENT", "ALREADY_EXISTS", "FAILED_PRECONDITION")


def weekdays(calendar: calendar_pb2.Calendar) -> str:
    names = (calendar_pb2.CalendarWeekday.Name(w) for w in calendar.weekdays)
    return ", ".join(n.removeprefix("CALENDAR_WEEKDAY_").capitalize() for n in names)


def _name(viewer: Viewer, calendar_id: str) -> str:
    return f"teams/{viewer.session.team}/calendars/{calendar_id}"


async def _calendar(viewer: Viewer, calendar_id: str) -> calendar_pb2.Calendar:
    request = svc.GetCalendarRequest(name=_name(viewer, calendar_id))
    return (await viewer.call(viewer.api.jobs.GetCalendar, request)).calendar


@page(TEAM)
async def calendars_list(request: Request, viewer: Viewer) -> Response:
    found = await viewer.call(viewer.api.jobs.ListCalendars, svc.ListCalendarsRequest())
    return viewer.render(
        "calendars.html", {"calendars": list(found.calendars), "weekdays": weekdays}
    )


def _detail_page(
    viewer: Viewer,
    calendar: calendar_pb2.Calendar,
    in_use: Sequence[str] = (),
    status: int = 200,
) -> Response:
    context = {"calendar": calendar, "weekdays": weekdays, "in_use": in_use}
    return viewer.render("calendar.html", context, status)


@page(TEAM)
async def calendar_detail(request: Request, viewer: Viewer) -> Response:
    return _detail_page(viewer, await _calendar(viewer, request.path_params["calendar_id"]))


def _form_page(
    viewer: Viewer,
    form: CalendarForm,
    *,
    stored: calendar_pb2.Calendar | None = None,
    etag: str = "",
    stale: calendar_pb2.Calendar | None = None,
    status: int = 200,
) -> Response:
    context = {
        "form": form.values,
        "ticked": form.weekdays,
        "problems": form.problems,
        "invalid": form.invalid,
        "calendar": stored,
        "etag": etag,
        "stale": stale,
        "weekday_choices": WEEKDAYS,
        "zones": zone_names(),
        "action": NEW if stored is None else f"/calendars/{stored.calendar_id}/edit",
    }
    return viewer.render("calendar_form.html", context, status)


async def _read_form(viewer: Viewer) -> tuple[CalendarForm, calendar_pb2.Calendar, str]:
    """The form sent, the calendar it says, and the etag it was read at (on an edit)."""
    fields = await viewer.form()
    ticked = [form_text(day) for day in fields.getlist("weekdays")]
    form = CalendarForm.from_fields(fields, ticked)
    return form, form.calendar(), form_text(fields.get("etag"))


@page(TEAM)
async def calendar_new(request: Request, viewer: Viewer) -> Response:
    return _form_page(viewer, CalendarForm())


@page(TEAM)
async def calendar_create(request: Request, viewer: Viewer) -> Response:
    form, calendar, _ = await _read_form(viewer)
    if not form.problems:
        create = svc.CreateCalendarRequest(calendar=calendar)
        try:
            await viewer.call(viewer.api.jobs.CreateCalendar, create)
        except ApiError as error:
            if error.code not in _FORM_REFUSALS:
                raise
            form.problems += problems_of(error)
        else:
            path = f"/calendars/{calendar.calendar_id}"
            return viewer.redirect(path, f"Created calendar {calendar.calendar_id}.")
    return _form_page(viewer, form, status=422)


@page(TEAM)
async def calendar_edit(request: Request, viewer: Viewer) -> Response:
    stored = await _calendar(viewer, request.path_params["calendar_id"])
    return _form_page(viewer, CalendarForm.of_calendar(stored), stored=stored, etag=stored.etag)


@page(TEAM)
async def calendar_update(request: Request, viewer: Viewer) -> Response:
    """The change sent with the etag of the version it started from: if the calendar changed
    since, nothing is saved and the page says so, keeping the change."""
    stored = await _calendar(viewer, request.path_params["calendar_id"])
    form, calendar, etag = await _read_form(viewer)
    form.values["calendar_id"] = stored.calendar_id
    stale = None
    if not form.problems:
        calendar.name, calendar.etag = stored.name, etag
        update = svc.UpdateCalendarRequest(calendar=calendar)
        try:
            await viewer.call(viewer.api.jobs.UpdateCalendar, update)
        except ApiError as error:
            if error.reason == "ETAG_MISMATCH":
                stale = stored
            elif error.code in _FORM_REFUSALS:
                form.problems += problems_of(error)
            else:
                raise
        else:
            return viewer.redirect(f"/calendars/{stored.calendar_id}", "Saved.")
    status = 409 if stale else 422
    return _form_page(viewer, form, stored=stored, etag=etag, stale=stale, status=status)


@page(TEAM)
async def calendar_delete_confirm(request: Request, viewer: Viewer) -> Response:
    """The delete's confirmation, saying whether jobs exclude the calendar."""
    calendar = await _calendar(viewer, request.path_params["calendar_id"])
    return viewer.render("calendar_delete.html", {"calendar": calendar})


@page(TEAM)
async def calendar_delete(request: Request, viewer: Viewer) -> Response:
    """Deletes the calendar; refused while jobs exclude it, the page then names them."""
    calendar_id = request.path_params["calendar_id"]
    etag = form_text((await viewer.form()).get("etag"))
    delete = svc.DeleteCalendarRequest(name=_name(viewer, calendar_id), etag=etag)
    try:
        await viewer.call(viewer.api.jobs.DeleteCalendar, delete)
    except ApiError as error:
        if error.reason == "CALENDAR_IN_USE":
            in_use = [j for j in error.details.metadata.get("jobs", "").split(",") if j]
            stored = await _calendar(viewer, calendar_id)
            return _detail_page(viewer, stored, in_use, 409)
        if error.reason != "ETAG_MISMATCH":
            raise
        message = "Not deleted: the calendar changed since you opened it; look at it again."
        return viewer.redirect(f"/calendars/{calendar_id}", message)
    return viewer.redirect("/calendars", f"Deleted calendar {calendar_id}.")


routes = [
    Route("/calendars", calendars_list, methods=["GET"]),
    Route(NEW, calendar_new, methods=["GET"]),
    Route(NEW, calendar_create, methods=["POST"]),
    Route("/calendars/{calendar_id}", calendar_detail, methods=["GET"]),
    Route("/calendars/{calendar_id}/edit", calendar_edit, methods=["GET"]),
    Route("/calendars/{calendar_id}/edit", calendar_update, methods=["POST"]),
    Route("/calendars/{calendar_id}/delete", calendar_delete_confirm, methods=["GET"]),
    Route("/calendars/{calendar_id}/delete", calendar_delete, methods=["POST"]),
]
