"""A calendar between its message (``duetime.jobs.v1.Calendar``), the domain's rules, and the
JSON document ``calendars.rules`` stores (versioned, ``"v": 1``; dates ``YYYY-MM-DD``, yearly
dates ``MM-DD``, weekdays ISO numbers 1 to 7)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from duetime.jobs.v1 import calendar_pb2
from duetime_core.calendars import (
    CalendarRecord,
    CalendarRules,
    DateRange,
    Weekday,
    YearlyDate,
    calendar_id_problem,
    rules_violations,
)
from duetime_core.errors import InvalidArgument
from duetime_infra.codec.timeconv import datetime_to_timestamp
from duetime_infra.codec.violations import Violations

RULES_JSON_VERSION = 1
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_YEARLY = re.compile(r"([0-9]{2})-([0-9]{2})")
_WEEKDAYS = frozenset(int(w) for w in Weekday)


def calendar_name(team_id: str, calendar_id: str) -> str:
    return f"teams/{team_id}/calendars/{calendar_id}"


def _read_date(v: Violations, field: str, text: str) -> date | None:
    if _DATE.fullmatch(text):
        try:
            return date.fromisoformat(text)
        except ValueError:
            pass
    v.add(field, f"must be a date YYYY-MM-DD, got {text!r}")
    return None


def _read_yearly(v: Violations, field: str, text: str) -> YearlyDate | None:
    match = _YEARLY.fullmatch(text)
    if match is None:
        v.add(field, f"must be a month and day MM-DD, got {text!r}")
        return None
    return YearlyDate(int(match[1]), int(match[2]))


def _read_weekdays(v: Violations, path: str, values: Sequence[int]) -> frozenset[Weekday]:
    days: set[Weekday] = set()
    for i, value in enumerate(values):
        if value in _WEEKDAYS:
            days.add(Weekday(value))
        else:
            v.add(f"{path}.weekdays[{i}]", f"unknown value {value}")
    return frozenset(days)


def decode_calendar(msg: calendar_pb2.Calendar, path: str = "calendar") -> CalendarRules:
    """The rules ``msg`` gives, or INVALID_ARGUMENT naming every bad field under ``path``."""
    v = Violations()
    dates = {_read_date(v, f"{path}.dates[{i}]", text) for i, text in enumerate(msg.dates)}
    ranges: list[DateRange] = []
    for i, span in enumerate(msg.date_ranges):
        first = _read_date(v, f"{path}.date_ranges[{i}].start_date", span.start_date)
        last = _read_date(v, f"{path}.date_ranges[{i}].end_date", span.end_date)
        if first is not None and last is not None:
            ranges.append(DateRange(first, last))
    yearly: set[YearlyDate] = set()
    for i, text in enumerate(msg.yearly_dates):
        rule = _read_yearly(v, f"{path}.yearly_dates[{i}]", text)
        if rule is not None:
            yearly.add(rule)
    if not msg.time_zone:
        v.add(f"{path}.time_zone", "required")
    rules = CalendarRules(
        time_zone=msg.time_zone or "UTC",
        weekdays=_read_weekdays(v, path, list(msg.weekdays)),
        dates=frozenset(d for d in dates if d is not None),
        ranges=tuple(ranges),
        yearly=frozenset(yearly),
        description=msg.description,
    )
    for problem in rules_violations(rules):
        v.add(f"{path}.{problem.field}" if problem.field else path, problem.description)
    v.raise_if_any()
    return rules


def check_calendar_id(calendar_id: str, field: str) -> str:
    problem = calendar_id_problem(calendar_id)
    if problem is not None:
        raise InvalidArgument.field(field, problem)
    return calendar_id


def encode_calendar(record: CalendarRecord) -> calendar_pb2.Calendar:
    rules = record.rules
    out = calendar_pb2.Calendar(
        name=calendar_name(record.team_id, record.calendar_id),
        calendar_id=record.calendar_id,
        description=rules.description,
        time_zone=rules.time_zone,
        weekdays=[calendar_pb2.CalendarWeekday.ValueType(w) for w in sorted(rules.weekdays)],
        dates=sorted(d.isoformat() for d in rules.dates),
        yearly_dates=[f"{y.month:02d}-{y.day:02d}" for y in sorted(rules.yearly)],
        etag=record.etag,
        jobs=list(record.used_by),
    )
    for span in rules.ranges:
        out.date_ranges.add(start_date=span.first.isoformat(), end_date=span.last.isoformat())
    datetime_to_timestamp(record.create_time, out.create_time)
    datetime_to_timestamp(record.update_time, out.update_time)
    return out


def rules_to_json(rules: CalendarRules) -> dict[str, Any]:
    return {
        "v": RULES_JSON_VERSION,
        "time_zone": rules.time_zone,
        "description": rules.description,
        "weekdays": sorted(int(w) for w in rules.weekdays),
        "dates": sorted(d.isoformat() for d in rules.dates),
        "ranges": [[r.first.isoformat(), r.last.isoformat()] for r in rules.ranges],
        "yearly": [[y.month, y.day] for y in sorted(rules.yearly)],
    }


def rules_from_json(doc: Mapping[str, Any]) -> CalendarRules:
    """The rules of a stored document; ValueError if it is not one this build can read."""
    try:
        if doc["v"] != RULES_JSON_VERSION:
            raise ValueError(f"unknown version {doc['v']!r}")
        return CalendarRules(
            time_zone=str(doc["time_zone"]),
            description=str(doc.get("description", "")),
            weekdays=frozenset(Weekday(int(w)) for w in doc["weekdays"]),
            dates=frozenset(date.fromisoformat(d) for d in doc["dates"]),
            ranges=tuple(
                DateRange(date.fromisoformat(a), date.fromisoformat(b)) for a, b in doc["ranges"]
            ),
            yearly=frozenset(YearlyDate(int(m), int(d)) for m, d in doc["yearly"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed calendar document: {exc}") from exc
