"""Parsing a cron expression into the sets of values each field allows.

Five fields (``minute hour day-of-month month day-of-week``) or six with leading seconds.
Every field takes ``*``, values, ranges ``a-b``, steps ``*/s`` ``a/s`` ``a-b/s`` and lists;
months and weekdays also take names (``JAN``, ``mon``). Day-of-month adds ``L`` (last day),
``LW`` (last weekday) and ``nW`` (the weekday nearest the n-th); day-of-week adds ``nL``
(the month's last such weekday) and ``n#k`` (its k-th). ``?`` means "any" in either day field.
Weekday 7 is Sunday, like 0.

Every problem in the expression is reported, not only the first, and in words a user can act
on: the API shows them as they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NUMBER = re.compile(r"[0-9]+")
_MONTH_NAMES = {
    name: number
    for number, name in enumerate(
        ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"),
        start=1,
    )
}
_WEEKDAY_NAMES = {
    name: number for number, name in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"))
}
_SUNDAY_AS_SEVEN = 7
# Every value of every field spelled out fits in well under this; longer input is an error
# (or an attempt to make parsing expensive), and expressions are cached by their text.
MAX_EXPRESSION_LENGTH = 1024


class CronSyntaxError(ValueError):
    """The expression is not valid cron; ``problems`` holds one sentence per mistake."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class _TermError(ValueError):
    pass


@dataclass(frozen=True)
class _FieldKind:
    name: str
    low: int
    high: int
    names: dict[str, int] | None = None


_SECOND = _FieldKind("second", 0, 59)
_MINUTE = _FieldKind("minute", 0, 59)
_HOUR = _FieldKind("hour", 0, 23)
_DAY = _FieldKind("day-of-month", 1, 31)
_MONTH = _FieldKind("month", 1, 12, _MONTH_NAMES)
# 7 is accepted as Sunday and folded onto 0 once parsed.
_WEEKDAY = _FieldKind("day-of-week", 0, 7, _WEEKDAY_NAMES)


@dataclass(frozen=True)
class CronFields:
    """What each field allows. Weekdays count from Sunday = 0, as cron writes them."""

    seconds: tuple[int, ...]  # sorted, non-empty
    minutes: tuple[int, ...]  # sorted, non-empty
    hours: tuple[int, ...]  # sorted, non-empty
    months: frozenset[int]
    days: frozenset[int]  # plain days of the month
    last_day: bool  # L
    last_weekday: bool  # LW
    nearest_weekday: frozenset[int]  # nW
    weekdays: frozenset[int]
    last_of_weekday: frozenset[int]  # nL
    nth_weekday: frozenset[tuple[int, int]]  # n#k as (weekday, k)
    # Vixie cron: when both day fields are restricted, a day matching EITHER runs.
    day_or: bool
    # Debian cron: neither the minute nor the hour field starts with '*'.
    fixed_time: bool


def split_fields(expression: str) -> list[str]:
    """The six fields (seconds first, ``0`` when the expression has five)."""
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise CronSyntaxError([f"longer than {MAX_EXPRESSION_LENGTH} characters"])
    if expression.strip().startswith("@"):
        raise CronSyntaxError(
            ["macros such as @daily are not supported; write the fields, e.g. '0 0 * * *'"]
        )
    parts = expression.split()
    if len(parts) == 5:
        return ["0", *parts]
    if len(parts) == 6:
        return parts
    raise CronSyntaxError(
        [
            f"expected 5 fields (minute hour day-of-month month day-of-week) or 6 with "
            f"leading seconds, got {len(parts)}"
        ]
    )


def fixed_time_fields(fields: list[str]) -> bool:
    """Debian cron's rule for which jobs get the DST gap and fold treatment."""
    return not fields[1].startswith("*") and not fields[2].startswith("*")


def parse_cron(expression: str) -> CronFields:
    """Parse ``expression``; CronSyntaxError lists every problem found."""
    fields = split_fields(expression)
    problems: list[str] = []

    def plain(kind: _FieldKind, text: str) -> set[int]:
        try:
            return _parse_plain_list(kind, text)
        except _TermError as error:
            problems.append(f"{kind.name} field {text!r}: {error}")
            return {kind.low}

    seconds = plain(_SECOND, fields[0])
    minutes = plain(_MINUTE, fields[1])
    hours = plain(_HOUR, fields[2])
    day = _DaySpec()
    try:
        _parse_day_of_month(fields[3], day)
    except _TermError as error:
        problems.append(f"{_DAY.name} field {fields[3]!r}: {error}")
    months = plain(_MONTH, fields[4])
    weekday = _WeekdaySpec()
    try:
        _parse_day_of_week(fields[5], weekday)
    except _TermError as error:
        problems.append(f"{_WEEKDAY.name} field {fields[5]!r}: {error}")
    if problems:
        raise CronSyntaxError(problems)

    dom_any = fields[3].startswith("*") or fields[3] == "?"
    dow_any = fields[5].startswith("*") or fields[5] == "?"
    return CronFields(
        seconds=tuple(sorted(seconds)),
        minutes=tuple(sorted(minutes)),
        hours=tuple(sorted(hours)),
        months=frozenset(months),
        days=frozenset(day.days),
        last_day=day.last_day,
        last_weekday=day.last_weekday,
        nearest_weekday=frozenset(day.nearest),
        weekdays=frozenset(w % _SUNDAY_AS_SEVEN for w in weekday.weekdays),
        last_of_weekday=frozenset(weekday.last_of),
        nth_weekday=frozenset(weekday.nth),
        day_or=not dom_any and not dow_any,
        fixed_time=fixed_time_fields(fields),
    )


def _parse_plain_list(kind: _FieldKind, text: str) -> set[int]:
    values: set[int] = set()
    for term in text.split(","):
        if not term:
            raise _TermError("empty item in the list")
        values |= _parse_plain_term(kind, term)
    return values


def _parse_plain_term(kind: _FieldKind, term: str) -> set[int]:
    """``*``, ``a``, ``a-b``, each optionally followed by ``/step``."""
    body, slash, step_text = term.partition("/")
    step = 1
    if slash:
        if not _NUMBER.fullmatch(step_text):
            raise _TermError(f"step {step_text!r} is not a number")
        step = int(step_text)
        if step == 0:
            raise _TermError("step must be at least 1")
    if body == "*":
        start, end = kind.low, kind.high
        if kind is _WEEKDAY:
            end = 6  # '*' means each day once; 7 would repeat Sunday
    elif "-" in body:
        start_text, _, end_text = body.partition("-")
        start = _value(kind, start_text)
        end = _value(kind, end_text, range_end=True)
        if end < start:
            top = 6 if kind is _WEEKDAY else kind.high
            raise _TermError(
                f"range {body!r} runs backwards; write it as two items, e.g. "
                f"'{start_text}-{top},{kind.low}-{end_text}'"
            )
    else:
        start = _value(kind, body)
        # 'a/step' runs from a to the end of the field, as in Vixie cron.
        end = kind.high if slash else start
        if kind is _WEEKDAY and slash:
            end = 6
    return set(range(start, end + 1, step))


def _value(kind: _FieldKind, text: str, *, range_end: bool = False) -> int:
    if kind.names is not None and text.upper() in kind.names:
        value = kind.names[text.upper()]
        if kind is _WEEKDAY and range_end and value == 0:
            return _SUNDAY_AS_SEVEN  # MON-SUN reads as Monday through Sunday
        return value
    if not _NUMBER.fullmatch(text):
        if not text:
            raise _TermError("missing value")
        if kind.names is not None:
            raise _TermError(
                f"{text!r} is neither a number nor a name like {next(iter(kind.names))}"
            )
        raise _TermError(f"{text!r} is not a number")
    value = int(text)
    if not kind.low <= value <= kind.high:
        raise _TermError(f"{value} is out of range {kind.low}-{kind.high}")
    return value


class _DaySpec:
    def __init__(self) -> None:
        self.days: set[int] = set()
        self.last_day = False
        self.last_weekday = False
        self.nearest: set[int] = set()


def _parse_day_of_month(text: str, spec: _DaySpec) -> None:
    if text == "?":
        spec.days.update(range(1, 32))
        return
    for term in text.split(","):
        upper = term.upper()
        if not term:
            raise _TermError("empty item in the list")
        if upper == "?":
            raise _TermError("'?' must stand alone in the field")
        if upper == "L":
            spec.last_day = True
        elif upper == "LW":
            spec.last_weekday = True
        elif upper.endswith("W"):
            day_text = term[:-1]
            if not _NUMBER.fullmatch(day_text):
                raise _TermError(f"{term!r}: W follows a single day, e.g. 15W")
            spec.nearest.add(_value(_DAY, day_text))
        elif "L" in upper or "W" in upper:
            raise _TermError(f"{term!r}: use L, LW or nW (e.g. 15W) on their own")
        elif "#" in term:
            raise _TermError(f"{term!r}: '#' belongs in the day-of-week field")
        else:
            spec.days |= _parse_plain_term(_DAY, term)


class _WeekdaySpec:
    def __init__(self) -> None:
        self.weekdays: set[int] = set()
        self.last_of: set[int] = set()
        self.nth: set[tuple[int, int]] = set()


def _parse_day_of_week(text: str, spec: _WeekdaySpec) -> None:
    if text == "?":
        spec.weekdays.update(range(7))
        return
    for term in text.split(","):
        upper = term.upper()
        if not term:
            raise _TermError("empty item in the list")
        if upper == "?":
            raise _TermError("'?' must stand alone in the field")
        if "#" in term:
            day_text, _, nth_text = term.partition("#")
            if not _NUMBER.fullmatch(nth_text) or not 1 <= int(nth_text) <= 5:
                raise _TermError(f"{term!r}: after '#' comes a week number 1-5, e.g. MON#2")
            spec.nth.add((_value(_WEEKDAY, day_text) % _SUNDAY_AS_SEVEN, int(nth_text)))
        elif upper == "L":
            raise _TermError("'L' alone belongs in day-of-month; use e.g. 5L for the last Friday")
        elif upper.endswith("L") and upper not in _WEEKDAY_NAMES:
            day_text = term[:-1]
            if "-" in day_text or "/" in day_text or "," in day_text:
                raise _TermError(f"{term!r}: L follows a single weekday, e.g. 5L or FRIL")
            spec.last_of.add(_value(_WEEKDAY, day_text) % _SUNDAY_AS_SEVEN)
        elif upper.endswith("W") and _NUMBER.fullmatch(term[:-1]):
            raise _TermError(f"{term!r}: W belongs in the day-of-month field")
        else:
            spec.weekdays |= _parse_plain_term(_WEEKDAY, term)
