"""A team's calendars: named sets of days on which the jobs that exclude them do not run.

A calendar's rules (weekdays, single dates, inclusive date ranges, yearly month-days) are read
on the calendar's own zone: an occurrence is excluded when its nominal time, converted to that
zone, falls on a day a rule names, whatever the job's zone. A yearly February 29 names that day
in leap years only. "Business days" is not a kind of calendar but a way to make one: Saturday
and Sunday excluded, plus the holidays listed. What the claim, a preview, a backfill and an
explanation do with a calendar: docs/calendars.md.
"""

from __future__ import annotations

import calendar as gregorian
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime

from duetime_core.errors import FieldViolation, InvalidArgument
from duetime_core.schedule.dst import load_zone
from duetime_core.teams import MAX_DESCRIPTION, team_id_problem
from duetime_core.text import text_problem

MAX_CALENDAR_RULES = 1000
MAX_JOB_CALENDARS = 20


class Weekday(enum.IntEnum):
    """ISO weekdays, as ``date.isoweekday`` numbers them (and google.type.DayOfWeek)."""

    MONDAY = 1
    TUESDAY = 2
    WEDNESDAY = 3
    THURSDAY = 4
    FRIDAY = 5
    SATURDAY = 6
    SUNDAY = 7


WEEKEND = frozenset({Weekday.SATURDAY, Weekday.SUNDAY})


@dataclass(frozen=True, order=True)
class DateRange:
    """The days from ``first`` to ``last``, both included."""

    first: date
    last: date


@dataclass(frozen=True, order=True)
class YearlyDate:
    """A month and day every year; February 29 only in leap years."""

    month: int
    day: int


@dataclass(frozen=True)
class CalendarRules:
    """What a calendar excludes, read in ``time_zone``."""

    time_zone: str
    weekdays: frozenset[Weekday] = frozenset()
    dates: frozenset[date] = frozenset()
    ranges: tuple[DateRange, ...] = ()
    yearly: frozenset[YearlyDate] = frozenset()
    description: str = ""

    def excludes_day(self, day: date) -> bool:
        return (
            day.isoweekday() in self.weekdays
            or day in self.dates
            or YearlyDate(day.month, day.day) in self.yearly
            or any(r.first <= day <= r.last for r in self.ranges)
        )

    def excludes(self, instant: datetime) -> bool:
        """Whether the day ``instant`` (aware) falls on in the calendar's zone is excluded."""
        return self.excludes_day(instant.astimezone(load_zone(self.time_zone)).date())


@dataclass(frozen=True)
class CalendarRecord:
    """A stored calendar: its id within the team, its rules, and its version."""

    team_id: str
    calendar_id: str
    rules: CalendarRules
    version: int
    create_time: datetime
    update_time: datetime
    # The team's jobs that exclude it (not deleted), filled where an answer shows them.
    used_by: tuple[str, ...] = ()

    @property
    def etag(self) -> str:
        return f'W/"{self.version}"'


def business_days(
    time_zone: str, holidays: Iterable[date] = (), description: str = ""
) -> CalendarRules:
    """A calendar excluding what is not a business day: Saturdays, Sundays and ``holidays``."""
    return CalendarRules(
        time_zone=time_zone, weekdays=WEEKEND, dates=frozenset(holidays), description=description
    )


def excluded_by(calendars: Sequence[tuple[str, CalendarRules]], instant: datetime) -> str | None:
    """The id of the first of ``calendars`` (in the job's order) excluding ``instant``; None
    when none does."""
    for calendar_id, rules in calendars:
        if rules.excludes(instant):
            return calendar_id
    return None


def job_calendars(
    names: Sequence[str], known: Mapping[str, CalendarRules]
) -> tuple[tuple[str, CalendarRules], ...]:
    """The calendars a job names, in its order, among those ``known`` (a name no longer known,
    deleted since, excludes nothing: the API refuses to delete a calendar still named)."""
    return tuple((name, known[name]) for name in names if name in known)


def calendar_id_problem(calendar_id: str) -> str | None:
    """Why ``calendar_id`` cannot name a calendar (the rule of every id a user chooses)."""
    return team_id_problem(calendar_id)


def _yearly_problem(rule: YearlyDate) -> str | None:
    if not 1 <= rule.month <= 12:
        return f"month must be 1 to 12, got {rule.month}"
    # A leap year's length, so that February 29 is allowed (it applies in leap years only).
    days = gregorian.monthrange(2000, rule.month)[1]
    if not 1 <= rule.day <= days:
        return f"day must be 1 to {days} in month {rule.month}, got {rule.day}"
    return None


def rules_violations(rules: CalendarRules) -> list[FieldViolation]:
    """Every problem of ``rules``, each naming its field (as Calendar's proto names them)."""
    problems: list[FieldViolation] = []
    try:
        load_zone(rules.time_zone)
    except ValueError as failure:
        problems.append(FieldViolation("time_zone", str(failure)))
    count = len(rules.weekdays) + len(rules.dates) + len(rules.ranges) + len(rules.yearly)
    if count > MAX_CALENDAR_RULES:
        problems.append(
            FieldViolation("", f"at most {MAX_CALENDAR_RULES} rules a calendar, got {count}")
        )
    for i, span in enumerate(rules.ranges):
        if span.last < span.first:
            problems.append(
                FieldViolation(f"date_ranges[{i}].end_date", "must not be before start_date")
            )
    for rule in sorted(rules.yearly):
        wrong = _yearly_problem(rule)
        if wrong is not None:
            written = f"{rule.month:02d}-{rule.day:02d}"
            problems.append(FieldViolation("yearly_dates", f"{written}: {wrong}"))
    problem = text_problem(rules.description, MAX_DESCRIPTION)
    if problem is not None:
        problems.append(FieldViolation("description", problem))
    return problems


def check_rules(rules: CalendarRules, prefix: str = "calendar") -> CalendarRules:
    """``rules``, or INVALID_ARGUMENT naming every bad field under ``prefix``."""
    problems = rules_violations(rules)
    if problems:
        raise InvalidArgument(problems).prefixed(prefix)
    return rules


def job_calendar_problems(names: Sequence[str]) -> list[FieldViolation]:
    """Problems of a job's ``excluded_calendars`` as written (existence is the store's)."""
    problems: list[FieldViolation] = []
    if len(names) > MAX_JOB_CALENDARS:
        problems.append(
            FieldViolation(
                "excluded_calendars", f"at most {MAX_JOB_CALENDARS} calendars, got {len(names)}"
            )
        )
    seen: set[str] = set()
    for i, name in enumerate(names):
        problem = calendar_id_problem(name)
        if problem is not None:
            problems.append(FieldViolation(f"excluded_calendars[{i}]", problem))
        elif name in seen:
            problems.append(FieldViolation(f"excluded_calendars[{i}]", f"{name!r} is repeated"))
        seen.add(name)
    return problems
