"""The one time function: the first occurrence of a schedule strictly after an instant.

For cron, matching happens on the zone's wall clock and DST is resolved on top:

* an ordinary local time is its one instant;
* a local time in a spring-forward gap runs at the first instant after the gap (``SHIFT``)
  or not at all (``SKIP``) -- for fixed-time expressions; others follow elapsed time and have
  nothing in the gap;
* a local time in a fall-back fold runs at its first pass, its second, or both, per the fold
  policy -- for fixed-time expressions; others run at both passes.

Occurrences are a set of instants fixed by the schedule alone, so the answer is the same from
any start: the search below walks matching wall-clock times in order and stops at the first
one whose instant can no longer be beaten. The one place where wall-clock order and instant
order disagree is a fold, so a start inside a fold is handled explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import assert_never
from zoneinfo import ZoneInfo

from duetime_core.errors import FieldViolation, InvalidArgument
from duetime_core.schedule.cron_match import CronMatcher, compile_cron
from duetime_core.schedule.cron_parse import CronSyntaxError
from duetime_core.schedule.dst import WallKind, load_zone, read_wall, transition_in, wall_clock
from duetime_core.schedule.model import Cron, FoldPolicy, GapPolicy, Interval, OneOff, Schedule

# Each round of the cron search either answers or steps over one DST gap; a real zone has a
# few per year, so this bound is never reached by a schedule that can fire.
_MAX_GAPS_STEPPED = 10_000


def next_fire_time(schedule: Schedule, after: datetime) -> datetime | None:
    """The first occurrence strictly after ``after`` (aware, any zone), as aware UTC.

    None when there is none: a one-off already past, a series past its ``end_time``, or a
    cron expression that never matches again before year 10000. InvalidArgument for a
    schedule that cannot be evaluated (bad expression or zone, non-positive interval, naive
    instant).
    """
    if after.tzinfo is None or after.utcoffset() is None:
        raise ValueError("after must be an aware datetime")
    after = after.astimezone(UTC)
    try:
        match schedule:
            case OneOff():
                return _next_one_off(schedule, after)
            case Interval():
                found = _next_interval(schedule, after)
            case Cron():
                found = None if _ended(schedule, after) else _next_cron(schedule, after)
            case _:
                assert_never(schedule)
    except OverflowError:
        return None  # the next occurrence is past what datetime can hold
    return None if found is None or _ended(schedule, found) else found


def _ended(schedule: Interval | Cron, at: datetime) -> bool:
    """Whether ``at`` is past the series' end (an occurrence at the end itself still runs)."""
    end = schedule.end_time
    return end is not None and at > _aware_utc(end, "end_time")


def fire_times(schedule: Schedule, after: datetime, count: int) -> list[datetime]:
    """The next ``count`` occurrences strictly after ``after`` (fewer if the schedule ends)."""
    if count < 0:
        raise ValueError("count must not be negative")
    found: list[datetime] = []
    moment: datetime | None = after
    while moment is not None and len(found) < count:
        moment = next_fire_time(schedule, moment)
        if moment is not None:
            found.append(moment)
    return found


def _aware_utc(value: datetime, field: str) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidArgument.field(field, "must be an instant with a time zone or offset")
    return value.astimezone(UTC)


def _next_one_off(schedule: OneOff, after: datetime) -> datetime | None:
    at = _aware_utc(schedule.at, "at")
    return at if at > after else None


def _next_interval(schedule: Interval, after: datetime) -> datetime | None:
    if schedule.every.total_seconds() <= 0:
        raise InvalidArgument.field("every", "must be longer than zero")
    anchor = _aware_utc(schedule.anchor, "anchor")
    if after < anchor:
        return anchor
    # timedelta // timedelta is exact integer microseconds: no float drift over years.
    steps = (after - anchor) // schedule.every + 1
    return anchor + steps * schedule.every


@dataclass(frozen=True, slots=True)
class _Passes:
    """Which instants a wall-clock match yields around DST, for one schedule."""

    first: bool  # a fold's first pass
    second: bool  # a fold's second pass
    shift: bool  # a gap's time moves to the end of the gap (else it is dropped)


def _passes_for(cron: Cron, fixed_time: bool) -> _Passes:
    if not fixed_time:
        # Real elapsed time: nothing in a gap, both passes of a fold. Overrides do not apply.
        return _Passes(first=True, second=True, shift=False)
    fold = cron.fold or FoldPolicy.FIRST
    return _Passes(
        first=fold in (FoldPolicy.FIRST, FoldPolicy.BOTH),
        second=fold in (FoldPolicy.LAST, FoldPolicy.BOTH),
        shift=(cron.gap or GapPolicy.SHIFT) == GapPolicy.SHIFT,
    )


def compile_cron_schedule(
    cron: Cron,
) -> tuple[CronMatcher | None, ZoneInfo | None, list[FieldViolation]]:
    """The matcher and zone of ``cron``, and a violation for each that is bad."""
    violations: list[FieldViolation] = []
    matcher = zone = None
    try:
        matcher = compile_cron(cron.expression)
    except CronSyntaxError as error:
        violations.extend(FieldViolation("expression", problem) for problem in error.problems)
    try:
        zone = load_zone(cron.time_zone)
    except ValueError as error:
        violations.append(FieldViolation("time_zone", str(error)))
    return matcher, zone, violations


def _next_cron(cron: Cron, after: datetime) -> datetime | None:
    matcher, zone, violations = compile_cron_schedule(cron)
    if matcher is None or zone is None:
        raise InvalidArgument(violations)
    if not matcher.can_match:
        return None
    passes = _passes_for(cron, matcher.fixed_time)
    wall = wall_clock(after, zone)
    here = read_wall(wall, zone)
    if here.kind is not WallKind.FOLD:
        # The clock never shows ``wall`` again after ``after``, so every later occurrence
        # comes from a later wall-clock time.
        return _search(matcher, zone, passes, matcher.first_after(wall))

    # ``after`` is inside a repeated stretch of wall-clock time, [repeat_start, repeat_end):
    # the clocks show it first at ``first_offset``, then, from ``change``, at the smaller
    # ``second_offset``.
    first_offset = wall - here.earlier.replace(tzinfo=None)
    second_offset = wall - here.later.replace(tzinfo=None)
    change = transition_in(here.earlier, here.later, zone).replace(tzinfo=None)
    repeat_start, repeat_end = change + second_offset, change + first_offset
    if after < here.later:
        # ``after`` is on the first pass. Later first passes come before every second pass,
        # and second passes come before anything after the repeat.
        if passes.first:
            found = matcher.first_after(wall)
            if found is not None and found < repeat_end:
                return _instant(found, first_offset)
        if passes.second:
            found = matcher.first_at_or_after(repeat_start)
            if found is not None and found < repeat_end:
                return _instant(found, second_offset)
    elif passes.second:
        found = matcher.first_after(wall)
        if found is not None and found < repeat_end:
            return _instant(found, second_offset)
    return _search(matcher, zone, passes, matcher.first_at_or_after(repeat_end))


def _instant(local: datetime, offset: timedelta) -> datetime:
    return (local - offset).replace(tzinfo=UTC)


def _search(
    matcher: CronMatcher, zone: ZoneInfo, passes: _Passes, local: datetime | None
) -> datetime | None:
    """The first occurrence from the wall-clock match ``local`` on.

    The caller guarantees that no occurrence can come from a wall-clock time before
    ``local``. Then the first match that names an instant wins: an ordinary time is the
    earliest, a fold's first pass precedes every later instant (and its second pass, when
    the first is not wanted, precedes every other second pass), and a shifted gap time is
    the gap's end, which nothing later can precede.
    """
    for _ in range(_MAX_GAPS_STEPPED):
        if local is None:
            return None
        reading = read_wall(local, zone)
        if reading.kind is WallKind.ORDINARY:
            return reading.earlier
        if reading.kind is WallKind.FOLD:
            return reading.earlier if passes.first else reading.later
        gap_end = transition_in(reading.earlier, reading.later, zone)
        if passes.shift:
            return gap_end
        local = matcher.first_at_or_after(wall_clock(gap_end, zone))
    return None
