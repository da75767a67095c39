"""Checking a schedule before it is stored: every bad field, named relative to the schedule."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import assert_never

from duetime_core.errors import FieldViolation, InvalidArgument
from duetime_core.schedule.cron_match import compile_cron
from duetime_core.schedule.cron_parse import CronSyntaxError
from duetime_core.schedule.gaps import shortest_gap
from duetime_core.schedule.model import Cron, FoldPolicy, GapPolicy, Interval, OneOff, Schedule
from duetime_core.schedule.next_fire import compile_cron_schedule

_NOT_FIXED = (
    "applies only to fixed-time expressions (minute and hour fields not starting with '*'); "
    "{expression!r} follows real elapsed time through DST changes, so remove the override"
)


def validate(schedule: Schedule) -> None:
    """Raise InvalidArgument listing every bad field of ``schedule``; return if it is good."""
    violations = schedule_violations(schedule)
    if violations:
        raise InvalidArgument(violations)


def schedule_violations(schedule: Schedule) -> list[FieldViolation]:
    match schedule:
        case OneOff(at=at):
            return _aware("at", at)
        case Interval(every=every, anchor=anchor):
            violations = _aware("anchor", anchor) + _end_violations(schedule)
            if every.total_seconds() <= 0:
                violations.insert(0, FieldViolation("every", "must be longer than zero"))
            return violations
        case Cron():
            return _cron_violations(schedule) + _end_violations(schedule)
        case _:
            assert_never(schedule)


def jitter_window_violations(
    schedule: Schedule, window: timedelta, after: datetime
) -> list[FieldViolation]:
    """Why ``window`` cannot be this schedule's jitter window (``jitter_window``), if it cannot.

    A window at least as long as the shortest gap between occurrences could reorder runs or
    make two share an effective time. ``schedule`` must already be valid.
    """
    if window < timedelta(0):
        return [FieldViolation("jitter_window", "must not be negative")]
    if not window:
        return []
    gap = shortest_gap(schedule, after)
    if gap is not None and window >= gap:
        return [
            FieldViolation(
                "jitter_window",
                f"must be shorter than the shortest gap between occurrences, "
                f"{gap.total_seconds():g}s",
            )
        ]
    return []


def is_fixed_time(expression: str) -> bool:
    """True when neither the minute nor the hour field starts with ``*`` (Debian cron's rule).

    Fixed-time expressions (``30 2 * * *``, ``0 9-17 * * MON-FRI``) name local times, so the
    gap and fold policies decide what happens to them on DST nights; the others (``*/15 * * *
    *``, ``30 * * * *``) follow real elapsed time. The seconds field of a six-field expression
    does not count. InvalidArgument (``expression``) if the expression is not valid cron.
    """
    try:
        return compile_cron(expression).fixed_time
    except CronSyntaxError as error:
        raise InvalidArgument(
            FieldViolation("expression", problem) for problem in error.problems
        ) from error


def _aware(field: str, value: datetime) -> list[FieldViolation]:
    if value.tzinfo is None or value.utcoffset() is None:
        return [FieldViolation(field, "must be an instant with a time zone or offset")]
    return []


def _end_violations(schedule: Interval | Cron) -> list[FieldViolation]:
    return [] if schedule.end_time is None else _aware("end_time", schedule.end_time)


def _cron_violations(cron: Cron) -> list[FieldViolation]:
    matcher, _, violations = compile_cron_schedule(cron)
    if matcher is None:
        return violations
    if not matcher.can_match:
        violations.insert(
            0,
            FieldViolation(
                "expression",
                "never matches: no month has a day that satisfies both the day-of-month and "
                "the day-of-week fields (e.g. 30 February)",
            ),
        )
    # The API's codec may hand over raw strings; a typo must not silently mean the default.
    if cron.gap is not None and cron.gap not in tuple(GapPolicy):
        violations.append(FieldViolation("gap_policy", "must be SHIFT or SKIP"))
    elif cron.fold is not None and cron.fold not in tuple(FoldPolicy):
        violations.append(FieldViolation("fold_policy", "must be FIRST, LAST or BOTH"))
    elif not matcher.fixed_time:
        message = _NOT_FIXED.format(expression=cron.expression)
        if cron.gap is not None:
            violations.append(FieldViolation("gap_policy", message))
        if cron.fold is not None:
            violations.append(FieldViolation("fold_policy", message))
    return violations
