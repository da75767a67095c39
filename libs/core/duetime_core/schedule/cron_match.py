"""Finding the next wall-clock time a cron expression matches, with no time zone involved.

Time zones and DST are ``next_fire``'s business; here a "time" is a naive wall-clock reading
and the calendar is the proleptic Gregorian one. The search jumps: a month the expression
excludes is skipped whole, the matching days of a month are computed once and cached, and
within a day the next hour, minute and second come from bisecting sorted tuples. The
scheduler asks this once per claimed run, so it must cost microseconds, not a scan.
"""

from __future__ import annotations

import calendar
import functools
from bisect import bisect_left
from datetime import MAXYEAR, datetime, timedelta

from duetime_core.schedule.cron_parse import CronFields, parse_cron

_ONE_SECOND = timedelta(seconds=1)
# The Gregorian calendar repeats every 400 years, so a day rule that matches at all matches
# within that span; searching further would only loop.
_SEARCH_MONTHS = 400 * 12
_MONTH_CACHE_LIMIT = 512
_SATURDAY, _SUNDAY = 6, 0


def _last_weekday(length: int, first_weekday: int) -> int:
    """The last Monday-to-Friday day of a month (``LW``)."""
    last = (first_weekday + length - 1) % 7
    if last == _SATURDAY:
        return length - 1
    if last == _SUNDAY:
        return length - 2
    return length


def _nearest_weekday(day: int, length: int, first_weekday: int) -> int | None:
    """The weekday nearest ``day`` without leaving the month (``nW``), as Quartz defines it."""
    if day > length:
        return None  # 31W in a 30-day month names no day, as plain 31 does not
    weekday = (first_weekday + day - 1) % 7
    if weekday == _SATURDAY:
        return day - 1 if day > 1 else day + 2  # 1W on a Saturday is Monday the 3rd
    if weekday == _SUNDAY:
        return day + 1 if day < length else day - 2  # 31W on a Sunday is Friday the 29th
    return day


class CronMatcher:
    """A parsed expression, ready to answer "the next matching wall-clock time"."""

    def __init__(self, fields: CronFields) -> None:
        self.fields = fields
        self._seconds = fields.seconds
        self._minutes = fields.minutes
        self._hours = fields.hours
        self._months = fields.months
        self._month_days: dict[tuple[int, int], tuple[int, ...]] = {}
        self.can_match = self._some_month_matches()

    @property
    def fixed_time(self) -> bool:
        return self.fields.fixed_time

    def first_at_or_after(self, start: datetime) -> datetime | None:
        """The first matching naive time ``>= start``; None if none before year 10000."""
        if start.microsecond:
            start = start.replace(microsecond=0) + _ONE_SECOND
        year, month = start.year, start.month
        if month in self._months:
            days = self.days_of(year, month)
            index = bisect_left(days, start.day)
            if index < len(days) and days[index] == start.day:
                found = self._time_at_or_after(start.hour, start.minute, start.second)
                if found is not None:
                    return datetime(year, month, start.day, *found)
                index += 1
            if index < len(days):
                return self._first_time_on(year, month, days[index])
        for _ in range(_SEARCH_MONTHS):
            month += 1
            if month > 12:
                month, year = 1, year + 1
                if year > MAXYEAR:
                    return None
            if month in self._months:
                days = self.days_of(year, month)
                if days:
                    return self._first_time_on(year, month, days[0])
        return None

    def first_after(self, moment: datetime) -> datetime | None:
        """The first matching naive time strictly after ``moment``."""
        try:
            return self.first_at_or_after(moment.replace(microsecond=0) + _ONE_SECOND)
        except OverflowError:
            return None

    def days_of(self, year: int, month: int) -> tuple[int, ...]:
        """The days of ``year-month`` the day fields match, ascending."""
        key = (year, month)
        days = self._month_days.get(key)
        if days is None:
            if len(self._month_days) >= _MONTH_CACHE_LIMIT:
                self._month_days.clear()
            first_weekday_monday0, length = calendar.monthrange(year, month)
            days = self._matching_days(length, (first_weekday_monday0 + 1) % 7)
            self._month_days[key] = days
        return days

    def _matching_days(self, length: int, first_weekday: int) -> tuple[int, ...]:
        """Matching days of a month described by its length and the weekday of its 1st."""
        f = self.fields
        nearest = {_nearest_weekday(n, length, first_weekday) for n in f.nearest_weekday}
        last_weekday = _last_weekday(length, first_weekday) if f.last_weekday else None
        matched = []
        for day in range(1, length + 1):
            weekday = (first_weekday + day - 1) % 7
            dom = (
                day in f.days
                or (f.last_day and day == length)
                or day == last_weekday
                or day in nearest
            )
            dow = (
                weekday in f.weekdays
                or (weekday in f.last_of_weekday and day + 7 > length)
                or (weekday, (day - 1) // 7 + 1) in f.nth_weekday
            )
            if (dom or dow) if f.day_or else (dom and dow):
                matched.append(day)
        return tuple(matched)

    def _some_month_matches(self) -> bool:
        # A month's matching days depend only on its length and the weekday of its 1st, and
        # over 400 years every month starts on every weekday (February in leap years too),
        # so trying each combination decides exactly whether the expression ever fires.
        for month in self._months:
            lengths = (28, 29) if month == 2 else (calendar.monthrange(2001, month)[1],)
            for length in lengths:
                for first_weekday in range(7):
                    if self._matching_days(length, first_weekday):
                        return True
        return False

    def _first_time_on(self, year: int, month: int, day: int) -> datetime:
        return datetime(year, month, day, self._hours[0], self._minutes[0], self._seconds[0])

    def _time_at_or_after(self, hour: int, minute: int, second: int) -> tuple[int, int, int] | None:
        hours, minutes, seconds = self._hours, self._minutes, self._seconds
        h = bisect_left(hours, hour)
        if h == len(hours):
            return None
        if hours[h] == hour:
            m = bisect_left(minutes, minute)
            if m < len(minutes) and minutes[m] == minute:
                s = bisect_left(seconds, second)
                if s < len(seconds):
                    return hour, minute, seconds[s]
                m += 1
            if m < len(minutes):
                return hour, minutes[m], seconds[0]
            h += 1
            if h == len(hours):
                return None
        return hours[h], minutes[0], seconds[0]


@functools.lru_cache(maxsize=4096)
def compile_cron(expression: str) -> CronMatcher:
    """The matcher for ``expression``, parsed once per process; CronSyntaxError if invalid."""
    return CronMatcher(parse_cron(expression))
