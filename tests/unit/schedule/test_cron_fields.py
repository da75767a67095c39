"""Cron field semantics, in UTC so that no DST rule is involved.

Every expected time below was worked out by hand from the 2026 calendar (1 Jan 2026 is a
Thursday; 1 Feb and 1 Mar are Sundays, 1 Aug a Saturday, 31 May a Sunday).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from duetime_core.schedule import Cron, fire_times, is_fixed_time, next_fire_time


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, us: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, us, tzinfo=UTC)


NEW_YEAR = utc(2026, 1, 1)

CASES = [
    # expression, after, expected next
    ("0 12 * * MON", NEW_YEAR, utc(2026, 1, 5, 12)),
    ("0 12 * jan-mar sun", NEW_YEAR, utc(2026, 1, 4, 12)),  # names are case-insensitive
    ("0 0 * * 7", NEW_YEAR, utc(2026, 1, 4)),  # 7 is Sunday
    ("0 0 * * 0", NEW_YEAR, utc(2026, 1, 4)),
    ("0 0 * * MON-SUN", NEW_YEAR, utc(2026, 1, 2)),  # MON-SUN is the whole week
    ("0 0 * * 5-7", utc(2026, 1, 2, 1), utc(2026, 1, 3)),  # Fri-Sun through 7
    ("0 0 L * *", NEW_YEAR, utc(2026, 1, 31)),
    ("0 0 L * *", utc(2026, 1, 31), utc(2026, 2, 28)),
    ("0 0 L 2 *", utc(2027, 6, 1), utc(2028, 2, 29)),  # leap year
    ("0 9 15W * *", utc(2026, 2, 1), utc(2026, 2, 16, 9)),  # 15th a Sunday -> Monday
    ("0 9 15W * *", utc(2026, 8, 1), utc(2026, 8, 14, 9)),  # 15th a Saturday -> Friday
    ("0 9 15W * *", utc(2026, 1, 10), utc(2026, 1, 15, 9)),  # a Thursday: itself
    ("0 9 1W * *", utc(2026, 7, 2), utc(2026, 8, 3, 9)),  # 1 Aug Saturday -> Monday 3rd
    ("0 9 1W * *", utc(2026, 10, 2), utc(2026, 11, 2, 9)),  # 1 Nov Sunday -> Monday 2nd
    ("0 9 31W * *", utc(2026, 5, 1), utc(2026, 5, 29, 9)),  # 31 May Sunday -> Friday 29th
    ("0 9 31W * *", NEW_YEAR, utc(2026, 1, 30, 9)),  # 31 Jan Saturday -> Friday 30th
    ("0 9 30W * *", utc(2026, 2, 1), utc(2026, 3, 30, 9)),  # no 30th in February
    ("0 18 LW * *", NEW_YEAR, utc(2026, 1, 30, 18)),  # 31 Jan is a Saturday
    ("0 18 LW * *", utc(2026, 2, 1), utc(2026, 2, 27, 18)),  # 28 Feb is a Saturday
    ("0 18 LW * *", utc(2026, 5, 1), utc(2026, 5, 29, 18)),  # 31 May is a Sunday
    ("0 18 LW * *", utc(2026, 3, 1), utc(2026, 3, 31, 18)),  # 31 Mar is a Tuesday
    ("0 10 * * 1#2", NEW_YEAR, utc(2026, 1, 12, 10)),
    ("0 10 * * MON#1", NEW_YEAR, utc(2026, 1, 5, 10)),
    ("0 10 * * 5#5", NEW_YEAR, utc(2026, 1, 30, 10)),
    ("0 10 * * 5#5", utc(2026, 1, 30, 10), utc(2026, 5, 29, 10)),  # Feb-Apr have 4 Fridays
    ("0 10 * * 5L", NEW_YEAR, utc(2026, 1, 30, 10)),
    ("0 10 * * 0L", NEW_YEAR, utc(2026, 1, 25, 10)),
    ("0 10 * * 7L", NEW_YEAR, utc(2026, 1, 25, 10)),
    ("0 10 * * FRIL", utc(2026, 2, 1), utc(2026, 2, 27, 10)),
    ("30 15 10 * * *", NEW_YEAR, utc(2026, 1, 1, 10, 15, 30)),  # six fields: seconds first
    ("*/20 * * * * *", NEW_YEAR, utc(2026, 1, 1, 0, 0, 20)),
    ("*/20 * * * * *", utc(2026, 1, 1, 0, 0, 40, 500_000), utc(2026, 1, 1, 0, 1)),
    ("0 0 13 * FRI", NEW_YEAR, utc(2026, 1, 2)),  # Vixie: 13th OR Friday -> Friday 2nd
    ("0 0 13 * FRI", utc(2026, 1, 10), utc(2026, 1, 13)),  # ... or the 13th, a Tuesday
    ("0 0 */2 * FRI", NEW_YEAR, utc(2026, 1, 9)),  # '*' day-of-month: AND -> odd Friday
    ("0 0 ? * MON", NEW_YEAR, utc(2026, 1, 5)),
    ("0 0 1 * ?", NEW_YEAR, utc(2026, 2, 1)),
    ("0 8-18/5 * * *", NEW_YEAR, utc(2026, 1, 1, 8)),
    ("0 8-18/5 * * *", utc(2026, 1, 1, 13), utc(2026, 1, 1, 18)),
    ("0 8-18/5 * * *", utc(2026, 1, 1, 18), utc(2026, 1, 2, 8)),
    ("0 12 1 */3 *", utc(2026, 1, 1, 12), utc(2026, 4, 1, 12)),
    ("5/20 * * * *", NEW_YEAR, utc(2026, 1, 1, 0, 5)),  # a/step runs from a
    ("0 0 1,15,L * *", utc(2026, 1, 15), utc(2026, 1, 31)),
    ("0 0 29 2 *", NEW_YEAR, utc(2028, 2, 29)),
    ("0 0 * 2 MON#5", NEW_YEAR, utc(2044, 2, 29)),  # only a leap February starting Monday
    ("59 23 31 12 *", NEW_YEAR, utc(2026, 12, 31, 23, 59)),
]


@pytest.mark.parametrize(("expression", "after", "expected"), CASES)
def test_next_time_by_hand(expression: str, after: datetime, expected: datetime) -> None:
    assert next_fire_time(Cron(expression, "UTC"), after) == expected


def test_hourly_steps_through_a_day() -> None:
    times = fire_times(Cron("0 8-18/5 * * *", "UTC"), NEW_YEAR, 4)
    assert times == [
        utc(2026, 1, 1, 8),
        utc(2026, 1, 1, 13),
        utc(2026, 1, 1, 18),
        utc(2026, 1, 2, 8),
    ]


def test_vixie_or_fires_on_either_day() -> None:
    # 13th of each month OR every Friday: the 13th of February 2026 is itself a Friday.
    times = fire_times(Cron("0 0 13 * 5", "UTC"), utc(2026, 1, 31), 4)
    assert times == [utc(2026, 2, 6), utc(2026, 2, 13), utc(2026, 2, 20), utc(2026, 2, 27)]


def test_result_is_utc_whatever_the_zone_of_after() -> None:
    from zoneinfo import ZoneInfo

    after = datetime(2026, 1, 1, 9, tzinfo=ZoneInfo("Asia/Tokyo"))  # 00:00Z
    found = next_fire_time(Cron("0 * * * *", "UTC"), after)
    assert found == utc(2026, 1, 1, 1)
    assert found is not None
    assert found.tzinfo is UTC


@pytest.mark.parametrize(
    ("expression", "fixed"),
    [
        ("30 2 * * *", True),
        ("0 9-17 * * MON-FRI", True),
        ("0,30 1 * * *", True),
        ("*/10 30 2 * * *", True),  # seconds do not count
        ("*/15 * * * *", False),
        ("30 * * * *", False),
        ("* 2 * * *", False),
        ("0 */2 * * *", False),
        ("0 30 * * * *", False),
    ],
)
def test_is_fixed_time(expression: str, fixed: bool) -> None:
    assert is_fixed_time(expression) is fixed
