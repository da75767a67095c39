"""``duetime calendars ...``: the team's calendars, days the jobs that exclude them do not run
(CreateCalendar, GetCalendar, ListCalendars, UpdateCalendar, DeleteCalendar;
docs/calendars.md). Dates are checked by the API, which names the bad one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated

import typer

from duetime.jobs.v1 import calendar_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime_cli.commands import command, enum_choices, usage_error
from duetime_cli.names import team_of
from duetime_cli.output import Format, OutputOption, emit
from duetime_cli.session import Session
from duetime_cli.tables import DetailGrid, ListTable, detail_grid, list_table
from duetime_client.describe import when

app = typer.Typer(
    help="Your team's calendars: days the jobs that exclude them do not run.",
    no_args_is_help=True,
)

_WEEKDAY = "CALENDAR_WEEKDAY_"
NONE = "-"

IdArg = Annotated[str, typer.Argument(metavar="CALENDAR", help="The calendar's id.")]
ZoneOption = Annotated[
    str | None,
    typer.Option("--zone", metavar="ZONE", help="The IANA zone its days are read in."),
]
_DAYS = ", ".join(enum_choices(calendar_pb2.CalendarWeekday, _WEEKDAY))
WeekdayOption = Annotated[
    list[str] | None,
    typer.Option("--weekday", metavar="DAY", help=f"A weekday excluded (repeatable): {_DAYS}."),
]
DateOption = Annotated[
    list[str] | None,
    typer.Option("--date", metavar="YYYY-MM-DD", help="A date excluded (repeatable)."),
]
RangeOption = Annotated[
    list[str] | None,
    typer.Option("--range", metavar="FROM..TO", help="Dates excluded, both included (repeatable)."),
]
YearlyOption = Annotated[
    list[str] | None,
    typer.Option("--yearly", metavar="MM-DD", help="A date excluded every year (repeatable)."),
]
BusinessOption = Annotated[
    bool,
    typer.Option(
        "--business-days", help="Exclude Saturdays and Sundays: with --date, business days."
    ),
]
DescriptionOption = Annotated[
    str | None, typer.Option(metavar="TEXT", help="What the calendar is for.")
]


def calendar_name(session: Session, calendar_id: str) -> str:
    return f"teams/{team_of(session)}/calendars/{calendar_id}"


def _weekday(text: str) -> calendar_pb2.CalendarWeekday.ValueType:
    choices = enum_choices(calendar_pb2.CalendarWeekday, _WEEKDAY)
    found = [c for c in choices if c.startswith(text.upper()) and len(text) >= 3]
    if len(found) != 1:
        raise typer.BadParameter(f"expected one of {_DAYS}", param_hint="--weekday")
    return calendar_pb2.CalendarWeekday.Value(_WEEKDAY + found[0])


def _range(text: str) -> calendar_pb2.CalendarDateRange:
    start, sep, end = text.partition("..")
    if not sep:
        raise usage_error(f"--range {text!r}: give FROM..TO, e.g. 2026-08-10..2026-08-21")
    return calendar_pb2.CalendarDateRange(start_date=start, end_date=end)


def _fill(
    out: calendar_pb2.Calendar,
    *,
    weekdays: list[str] | None,
    business_days: bool,
    dates: list[str] | None,
    ranges: list[str] | None,
    yearly: list[str] | None,
) -> None:
    """Sets each rule the command line gives, replacing the calendar's rule of that kind."""
    if weekdays is not None or business_days:
        days = {_weekday(w) for w in weekdays or ()}
        if business_days:
            days |= {calendar_pb2.CALENDAR_WEEKDAY_SATURDAY, calendar_pb2.CALENDAR_WEEKDAY_SUNDAY}
        out.ClearField("weekdays")
        out.weekdays.extend(sorted(days))
    if dates is not None:
        out.ClearField("dates")
        out.dates.extend(dates)
    if ranges is not None:
        out.ClearField("date_ranges")
        out.date_ranges.extend(_range(r) for r in ranges)
    if yearly is not None:
        out.ClearField("yearly_dates")
        out.yearly_dates.extend(yearly)


def _weekdays_text(calendar: calendar_pb2.Calendar) -> str:
    names = [calendar_pb2.CalendarWeekday.Name(w).removeprefix(_WEEKDAY) for w in calendar.weekdays]
    return ", ".join(n.capitalize() for n in names) or NONE


def calendars_table(found: Sequence[calendar_pb2.Calendar]) -> ListTable:
    table = list_table(
        "CALENDAR", "ZONE", "WEEKDAYS", "DATES", "RANGES", "YEARLY", "DESCRIPTION",
        drop=("DESCRIPTION", "YEARLY", "RANGES"),
    )  # fmt: skip
    for calendar in found:
        table.add_row(
            calendar.calendar_id,
            calendar.time_zone,
            _weekdays_text(calendar),
            str(len(calendar.dates)),
            str(len(calendar.date_ranges)),
            str(len(calendar.yearly_dates)),
            calendar.description or NONE,
        )
    return table


def calendar_detail(calendar: calendar_pb2.Calendar) -> DetailGrid:
    ranges = [f"{r.start_date}..{r.end_date}" for r in calendar.date_ranges]
    return detail_grid(
        [
            ("Name", calendar.name),
            ("Description", calendar.description or NONE),
            ("Zone", calendar.time_zone),
            ("Weekdays", _weekdays_text(calendar)),
            ("Dates", ", ".join(calendar.dates) or NONE),
            ("Ranges", ", ".join(ranges) or NONE),
            ("Yearly", ", ".join(calendar.yearly_dates) or NONE),
            ("Jobs", "\n".join(calendar.jobs) or NONE),
            ("Updated", when(calendar, "update_time")),
            ("Etag", calendar.etag),
        ]
    )


def _starting_from(
    session: Session, calendar_id: str, zone: str | None, creating: bool
) -> calendar_pb2.Calendar:
    """The calendar a create or an update starts from: a new one (its zone required), or the
    stored one."""
    if creating:
        if not zone:
            raise usage_error("--zone is required: the IANA zone the calendar's days are read in")
        return calendar_pb2.Calendar(calendar_id=calendar_id)
    request = svc.GetCalendarRequest(name=calendar_name(session, calendar_id))
    calendar = session.call(session.jobs.GetCalendar, request).calendar
    calendar.ClearField("jobs")
    return calendar


def _write_command(creating: bool) -> Callable[..., None]:
    """``create`` or ``update``, which take the same options: create makes the calendar they
    say; update replaces, on the calendar as it is, each kind of rule given."""

    def write(
        ctx: typer.Context,
        calendar_id: IdArg,
        zone: ZoneOption = None,
        weekday: WeekdayOption = None,
        business_days: BusinessOption = False,
        date: DateOption = None,
        range_: RangeOption = None,
        yearly: YearlyOption = None,
        description: DescriptionOption = None,
        output: OutputOption = Format.TABLE,
    ) -> None:
        with command(ctx, output) as session:
            calendar = _starting_from(session, calendar_id, zone, creating)
            if zone:
                calendar.time_zone = zone
            if description is not None:
                calendar.description = description
            _fill(
                calendar,
                weekdays=weekday,
                business_days=business_days,
                dates=date,
                ranges=range_,
                yearly=yearly,
            )
            response: svc.CreateCalendarResponse | svc.UpdateCalendarResponse
            if creating:
                create = svc.CreateCalendarRequest(calendar=calendar)
                response = session.call(session.jobs.CreateCalendar, create)
            else:
                update = svc.UpdateCalendarRequest(calendar=calendar)
                response = session.call(session.jobs.UpdateCalendar, update)
            emit(response, output, lambda: [calendar_detail(response.calendar)])

    return write


app.command(
    "create", help="Create a calendar (--zone required): the days it excludes, read in its zone."
)(_write_command(creating=True))


@app.command("get")
def get(ctx: typer.Context, calendar_id: IdArg, output: OutputOption = Format.TABLE) -> None:
    """Show a calendar, with the jobs that exclude it."""
    with command(ctx, output) as session:
        request = svc.GetCalendarRequest(name=calendar_name(session, calendar_id))
        response = session.call(session.jobs.GetCalendar, request)
        emit(response, output, lambda: [calendar_detail(response.calendar)])


@app.command("list")
def list_(ctx: typer.Context, output: OutputOption = Format.TABLE) -> None:
    """List your team's calendars."""
    with command(ctx, output) as session:
        response = session.call(session.jobs.ListCalendars, svc.ListCalendarsRequest())
        emit(response, output, lambda: [calendars_table(response.calendars)])


app.command(
    "update",
    help="Change a calendar: each kind of rule given replaces that kind (the others stay). It "
    "applies to occurrences claimed from now on; those already claimed keep their fate.",
)(_write_command(creating=False))


@app.command("delete")
def delete(ctx: typer.Context, calendar_id: IdArg, output: OutputOption = Format.TABLE) -> None:
    """Delete a calendar no job excludes (else FAILED_PRECONDITION, naming the jobs)."""
    with command(ctx, output) as session:
        request = svc.DeleteCalendarRequest(name=calendar_name(session, calendar_id))
        response = session.call(session.jobs.DeleteCalendar, request)
        emit(response, output, lambda: [f"Deleted calendar {calendar_id}."])
