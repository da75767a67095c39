"""The calendar form: a calendar's id, zone, description and rules as a person types them (the
weekdays ticked; dates, ranges and yearly dates one to a line or separated by commas), read
into a ``Calendar``, and a stored calendar read back into the form. The API checks each date
and names the bad one (``calendar.dates[0]``); the form only splits the text, naming the lines
it cannot split the way the API would name them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from duetime.jobs.v1 import calendar_pb2
from duetime_client.status import Violation

_WEEKDAY = "CALENDAR_WEEKDAY_"
# The weekdays as the form shows them, Monday first: (enum value's suffix, label).
WEEKDAYS = tuple(
    (name.removeprefix(_WEEKDAY), name.removeprefix(_WEEKDAY).capitalize())
    for name, number in calendar_pb2.CalendarWeekday.items()
    if number
)
_TEXT_FIELDS = ("calendar_id", "description", "time_zone", "dates", "date_ranges", "yearly_dates")
_ITEMS = re.compile(r"[,\s]+")
_RANGE = re.compile(r"\s*(?:\.\.|\s+to\s+)\s*")


def _items(text: str) -> list[str]:
    return [item for item in _ITEMS.split(text) if item]


def form_field(api_field: str) -> str:
    """The form's field an API field path names: ``calendar.date_ranges[0].end_date`` is
    ``date_ranges``."""
    return re.split(r"[.\[]", api_field.removeprefix("calendar."), maxsplit=1)[0]


@dataclass
class CalendarForm:
    """The form's values as text (what is shown back), the weekdays ticked, and what is wrong."""

    values: dict[str, str] = field(default_factory=lambda: dict.fromkeys(_TEXT_FIELDS, ""))
    weekdays: list[str] = field(default_factory=list)
    problems: list[Violation] = field(default_factory=list)

    @classmethod
    def from_fields(cls, fields: Mapping[str, object], weekdays: list[str]) -> CalendarForm:
        values = {
            k: v.strip() if isinstance(v, str) else ""
            for k, v in fields.items()
            if k in _TEXT_FIELDS
        }
        return cls({**dict.fromkeys(_TEXT_FIELDS, ""), **values}, weekdays)

    @property
    def invalid(self) -> set[str]:
        """The form's fields a problem names, marked on the page."""
        return {form_field(p.field) for p in self.problems}

    def calendar(self) -> calendar_pb2.Calendar:
        """The calendar the form says (``problems`` says what it could not read)."""
        v = self.values
        calendar = calendar_pb2.Calendar(
            calendar_id=v["calendar_id"],
            description=v["description"],
            time_zone=v["time_zone"],
            dates=_items(v["dates"]),
            yearly_dates=_items(v["yearly_dates"]),
        )
        known = dict(WEEKDAYS)
        for day in self.weekdays:
            if day not in known:
                self.problems.append(Violation("calendar.weekdays", f"no weekday {day!r}"))
                continue
            calendar.weekdays.append(calendar_pb2.CalendarWeekday.Value(_WEEKDAY + day))
        lines = (line.strip() for line in v["date_ranges"].replace(",", "\n").splitlines())
        for i, line in enumerate(line for line in lines if line):
            ends = _RANGE.split(line)
            if len(ends) != 2:
                why = f"{line!r}: give FROM..TO, such as 2026-08-10..2026-08-21"
                self.problems.append(Violation(f"calendar.date_ranges[{i}]", why))
                continue
            calendar.date_ranges.add(start_date=ends[0], end_date=ends[1])
        return calendar

    @classmethod
    def of_calendar(cls, calendar: calendar_pb2.Calendar) -> CalendarForm:
        days = [
            calendar_pb2.CalendarWeekday.Name(w).removeprefix(_WEEKDAY) for w in calendar.weekdays
        ]
        values = {
            "calendar_id": calendar.calendar_id,
            "description": calendar.description,
            "time_zone": calendar.time_zone,
            "dates": "\n".join(calendar.dates),
            "date_ranges": "\n".join(f"{r.start_date}..{r.end_date}" for r in calendar.date_ranges),
            "yearly_dates": "\n".join(calendar.yearly_dates),
        }
        return cls(values, days)
