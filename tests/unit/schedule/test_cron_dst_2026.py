"""Cron across the 2026 DST nights, with every expected instant written out by hand.

Expected times are spelled as local time with the offset in force (``-04:00`` is EDT), taken
from the published 2026 transitions, not computed by the code under test:

* America/New_York   gap  8 Mar 02:00 -05 -> 03:00 -04; fold  1 Nov 02:00 -04 -> 01:00 -05
* Europe/London      gap 29 Mar 01:00 +00 -> 02:00 +01; fold 25 Oct 02:00 +01 -> 01:00 +00
* Australia/Sydney   fold 5 Apr 03:00 +11 -> 02:00 +10; gap   4 Oct 02:00 +10 -> 03:00 +11
* Australia/Lord_Howe fold 5 Apr 02:00 +11 -> 01:30 +10:30; gap 4 Oct 02:00 +10:30 -> 02:30 +11
* America/Santiago (midnight) fold 4 Apr 24:00 -03 -> 23:00 -04; gap 6 Sep 00:00 -04 -> 01:00 -03
* Asia/Beirut (midnight) gap 29 Mar 00:00 +02 -> 01:00 +03; fold 24 Oct 24:00 +03 -> 23:00 +02
"""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import UTC, date, datetime, timedelta

import pytest

from duetime_core.schedule import (
    Cron,
    FoldPolicy,
    GapPolicy,
    fire_times,
    load_zone,
    next_fire_time,
)

SHIFT, SKIP = GapPolicy.SHIFT, GapPolicy.SKIP
FIRST, LAST, BOTH = FoldPolicy.FIRST, FoldPolicy.LAST, FoldPolicy.BOTH


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def local_date(instant: datetime, zone: str) -> date:
    return instant.astimezone(load_zone(zone)).date()


def times(cron: Cron, after: str, count: int) -> list[datetime]:
    return fire_times(cron, at(after), count)


# ---------------------------------------------------------------- fixed time in the gap
GAP_CASES = [
    # zone, expression, start, [day before, gap night, day after] under SHIFT
    (
        "America/New_York",
        "30 2 * * *",
        "2026-03-07T00:00:00-05:00",
        ["2026-03-07T02:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"],
    ),
    (
        "Europe/London",
        "30 1 * * *",
        "2026-03-28T00:00:00+00:00",
        ["2026-03-28T01:30:00+00:00", "2026-03-29T02:00:00+01:00", "2026-03-30T01:30:00+01:00"],
    ),
    (
        "Australia/Sydney",
        "30 2 * * *",
        "2026-10-03T00:00:00+10:00",
        ["2026-10-03T02:30:00+10:00", "2026-10-04T03:00:00+11:00", "2026-10-05T02:30:00+11:00"],
    ),
    (
        "Australia/Lord_Howe",
        "15 2 * * *",
        "2026-10-03T00:00:00+10:30",
        ["2026-10-03T02:15:00+10:30", "2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"],
    ),
    (
        "America/Santiago",
        "0 0 * * *",
        "2026-09-04T12:00:00-04:00",
        ["2026-09-05T00:00:00-04:00", "2026-09-06T01:00:00-03:00", "2026-09-07T00:00:00-03:00"],
    ),
    (
        "Asia/Beirut",
        "30 0 * * *",
        "2026-03-28T00:00:00+02:00",
        ["2026-03-28T00:30:00+02:00", "2026-03-29T01:00:00+03:00", "2026-03-30T00:30:00+03:00"],
    ),
]


@pytest.mark.parametrize(("zone", "expression", "start", "expected"), GAP_CASES)
def test_gap_shift_is_the_default(
    zone: str, expression: str, start: str, expected: list[str]
) -> None:
    assert times(Cron(expression, zone), start, 3) == [at(t) for t in expected]
    assert times(Cron(expression, zone, gap=SHIFT), start, 3) == [at(t) for t in expected]


@pytest.mark.parametrize(("zone", "expression", "start", "expected"), GAP_CASES)
def test_gap_skip_drops_the_night(
    zone: str, expression: str, start: str, expected: list[str]
) -> None:
    found = times(Cron(expression, zone, gap=SKIP), start, 2)
    assert found == [at(expected[0]), at(expected[2])]


def test_several_gap_times_shifting_to_one_instant_are_one_occurrence() -> None:
    # 02:00, 02:20 and 02:40 do not exist; they all become 03:00 EDT, as does 03:00 itself.
    cron = Cron("0,20,40 2,3 * * *", "America/New_York")
    found = times(cron, "2026-03-08T01:00:00-05:00", 4)
    assert found == [
        at("2026-03-08T03:00:00-04:00"),
        at("2026-03-08T03:20:00-04:00"),
        at("2026-03-08T03:40:00-04:00"),
        at("2026-03-09T02:00:00-04:00"),
    ]


def test_midnight_gap_day_starts_at_one() -> None:
    # Santiago skips 00:00-00:59 on 6 September: the day's midnight job runs at 01:00.
    cron = Cron("0 0 * * *", "America/Santiago")
    assert next_fire_time(cron, at("2026-09-05T23:59:59-04:00")) == at("2026-09-06T01:00:00-03:00")


# ---------------------------------------------------------------- fixed time in the fold
FOLD_CASES = [
    # zone, expression, start, day before, first pass, second pass, day after
    (
        "America/New_York",
        "30 1 * * *",
        "2026-10-31T00:00:00-04:00",
        "2026-10-31T01:30:00-04:00",
        "2026-11-01T01:30:00-04:00",
        "2026-11-01T01:30:00-05:00",
        "2026-11-02T01:30:00-05:00",
    ),
    (
        "Europe/London",
        "30 1 * * *",
        "2026-10-24T00:00:00+01:00",
        "2026-10-24T01:30:00+01:00",
        "2026-10-25T01:30:00+01:00",
        "2026-10-25T01:30:00+00:00",
        "2026-10-26T01:30:00+00:00",
    ),
    (
        "Australia/Sydney",
        "30 2 * * *",
        "2026-04-04T00:00:00+11:00",
        "2026-04-04T02:30:00+11:00",
        "2026-04-05T02:30:00+11:00",
        "2026-04-05T02:30:00+10:00",
        "2026-04-06T02:30:00+10:00",
    ),
    (
        "Australia/Lord_Howe",
        "45 1 * * *",
        "2026-04-04T00:00:00+11:00",
        "2026-04-04T01:45:00+11:00",
        "2026-04-05T01:45:00+11:00",
        "2026-04-05T01:45:00+10:30",
        "2026-04-06T01:45:00+10:30",
    ),
    (
        "America/Santiago",
        "30 23 * * *",
        "2026-04-03T12:00:00-03:00",
        "2026-04-03T23:30:00-03:00",
        "2026-04-04T23:30:00-03:00",
        "2026-04-04T23:30:00-04:00",
        "2026-04-05T23:30:00-04:00",
    ),
    (
        "Asia/Beirut",
        "15 23 * * *",
        "2026-10-23T12:00:00+03:00",
        "2026-10-23T23:15:00+03:00",
        "2026-10-24T23:15:00+03:00",
        "2026-10-24T23:15:00+02:00",
        "2026-10-25T23:15:00+02:00",
    ),
]


@pytest.mark.parametrize(
    ("zone", "expression", "start", "before", "first", "second", "after"), FOLD_CASES
)
def test_fold_policies(
    zone: str,
    expression: str,
    start: str,
    before: str,
    first: str,
    second: str,
    after: str,
) -> None:
    default = times(Cron(expression, zone), start, 3)
    assert default == [at(before), at(first), at(after)]
    assert times(Cron(expression, zone, fold=FIRST), start, 3) == default
    assert times(Cron(expression, zone, fold=LAST), start, 3) == [at(before), at(second), at(after)]
    assert times(Cron(expression, zone, fold=BOTH), start, 4) == [
        at(before),
        at(first),
        at(second),
        at(after),
    ]


@pytest.mark.parametrize(
    ("zone", "expression", "start", "before", "first", "second", "after"), FOLD_CASES
)
def test_fold_answers_from_inside_the_repeated_hour(
    zone: str,
    expression: str,
    start: str,
    before: str,
    first: str,
    second: str,
    after: str,
) -> None:
    ten = timedelta(minutes=10)
    on_first_pass = at(first) + ten
    on_second_pass = at(second) + ten
    # FIRST: the first pass is over once we are past it, on either pass.
    assert next_fire_time(Cron(expression, zone), on_first_pass) == at(after)
    assert next_fire_time(Cron(expression, zone), on_second_pass) == at(after)
    # LAST and BOTH: from the first pass the second is still to come; from the second, not.
    for fold in (LAST, BOTH):
        assert next_fire_time(Cron(expression, zone, fold=fold), on_first_pass) == at(second)
        assert next_fire_time(Cron(expression, zone, fold=fold), on_second_pass) == at(after)
    # Just before the first pass (but after the fold began for a wall clock 10 min earlier).
    assert next_fire_time(Cron(expression, zone, fold=LAST), at(first) - ten) == at(second)
    assert next_fire_time(Cron(expression, zone, fold=BOTH), at(first) - ten) == at(first)


@pytest.mark.parametrize(
    ("zone", "expression", "start", "before", "first", "second", "after"), FOLD_CASES
)
def test_starting_exactly_on_an_occurrence_moves_on(
    zone: str,
    expression: str,
    start: str,
    before: str,
    first: str,
    second: str,
    after: str,
) -> None:
    assert next_fire_time(Cron(expression, zone), at(before)) == at(first)
    assert next_fire_time(Cron(expression, zone), at(first)) == at(after)
    assert next_fire_time(Cron(expression, zone, fold=BOTH), at(first)) == at(second)
    assert next_fire_time(Cron(expression, zone, fold=BOTH), at(second)) == at(after)
    assert next_fire_time(Cron(expression, zone, fold=LAST), at(second)) == at(after)


def test_croniter_double_fire_is_absent() -> None:
    # croniter 7.0.0 fires this twice on 2026-11-01; Debian cron and Duetime once.
    found = times(Cron("30 1 * * *", "America/New_York"), "2026-10-31T12:00:00-04:00", 3)
    on_the_day = [t for t in found if t.astimezone(UTC).date().isoformat() == "2026-11-01"]
    assert on_the_day == [at("2026-11-01T01:30:00-04:00")]


def test_start_inside_second_pass_new_york() -> None:
    after = at("2026-11-01T01:40:00-05:00")  # second pass, 06:40Z
    assert next_fire_time(Cron("30 1 * * *", "America/New_York"), after) == at(
        "2026-11-02T01:30:00-05:00"
    )
    assert next_fire_time(Cron("*/15 * * * *", "America/New_York"), after) == at(
        "2026-11-01T01:45:00-05:00"
    )


def test_start_inside_first_pass_new_york() -> None:
    after = at("2026-11-01T01:40:00-04:00")  # first pass, 05:40Z
    assert next_fire_time(Cron("*/15 * * * *", "America/New_York"), after) == at(
        "2026-11-01T01:45:00-04:00"
    )
    # After the first pass's last quarter, the second pass starts over at 01:00 EST.
    late = at("2026-11-01T01:50:00-04:00")
    assert next_fire_time(Cron("*/15 * * * *", "America/New_York"), late) == at(
        "2026-11-01T01:00:00-05:00"
    )
    assert next_fire_time(Cron("0 1 * * *", "America/New_York", fold=LAST), late) == at(
        "2026-11-01T01:00:00-05:00"
    )


# ---------------------------------------------------------------- non-fixed expressions
NIGHTS = [
    # zone, UTC day containing the transition, local hours that day
    ("America/New_York", "2026-03-08", "2026-03-08T00:00:00-05:00", 23),
    ("America/New_York", "2026-11-01", "2026-11-01T00:00:00-04:00", 25),
    ("Europe/London", "2026-03-29", "2026-03-29T00:00:00+00:00", 23),
    ("Europe/London", "2026-10-25", "2026-10-25T00:00:00+01:00", 25),
    ("Australia/Sydney", "2026-04-04", "2026-04-05T00:00:00+11:00", 25),
    ("Australia/Sydney", "2026-10-03", "2026-10-04T00:00:00+10:00", 23),
    ("America/Santiago", "2026-04-05", "2026-04-04T00:00:00-03:00", 25),
    ("America/Santiago", "2026-09-06", "2026-09-06T01:00:00-03:00", 23),
    ("Asia/Beirut", "2026-03-28", "2026-03-29T01:00:00+03:00", 23),
    ("Asia/Beirut", "2026-10-24", "2026-10-24T00:00:00+03:00", 25),
]


def per_utc_hour(found: list[datetime], day: str) -> Counter[int]:
    return Counter(t.hour for t in found if t.date().isoformat() == day)


@pytest.mark.parametrize(("zone", "utc_day", "local_midnight", "hours"), NIGHTS)
def test_every_15_minutes_follows_elapsed_time(
    zone: str, utc_day: str, local_midnight: str, hours: int
) -> None:
    start = at(f"{utc_day}T00:00:00+00:00") - timedelta(seconds=1)
    found = fire_times(Cron("*/15 * * * *", zone), start, 4 * 24)
    assert per_utc_hour(found, utc_day) == Counter(dict.fromkeys(range(24), 4))
    # Spaced exactly 15 minutes, through the gap and both passes of the fold.
    assert {b - a for a, b in itertools.pairwise(found)} == {timedelta(minutes=15)}
    # The local day has 23 or 25 hours, each with its four quarter-hours.
    day = fire_times(Cron("*/15 * * * *", zone), at(local_midnight) - timedelta(seconds=1), 200)
    local_day = at(local_midnight).date()
    assert sum(1 for t in day if local_date(t, zone) == local_day) == 4 * hours


@pytest.mark.parametrize(("zone", "utc_day", "local_midnight", "hours"), NIGHTS)
def test_hourly_at_half_past_follows_elapsed_time(
    zone: str, utc_day: str, local_midnight: str, hours: int
) -> None:
    start = at(f"{utc_day}T00:00:00+00:00") - timedelta(seconds=1)
    found = fire_times(Cron("30 * * * *", zone), start, 24)
    # Whole-hour offsets: one occurrence per UTC hour, an hour apart, on both nights.
    assert per_utc_hour(found, utc_day) == Counter(dict.fromkeys(range(24), 1))
    day = fire_times(Cron("30 * * * *", zone), at(local_midnight) - timedelta(seconds=1), 30)
    assert sum(1 for t in day if local_date(t, zone) == at(local_midnight).date()) == hours


@pytest.mark.parametrize(
    ("utc_day", "local_midnight", "quarters"),
    [
        ("2026-04-04", "2026-04-05T00:00:00+11:00", 98),  # a 24.5-hour day
        ("2026-10-03", "2026-10-04T00:00:00+10:30", 94),  # a 23.5-hour day
    ],
)
def test_lord_howe_every_15_minutes_follows_elapsed_time(
    utc_day: str, local_midnight: str, quarters: int
) -> None:
    zone = "Australia/Lord_Howe"
    start = at(f"{utc_day}T00:00:00+00:00") - timedelta(seconds=1)
    found = fire_times(Cron("*/15 * * * *", zone), start, 4 * 24)
    assert per_utc_hour(found, utc_day) == Counter(dict.fromkeys(range(24), 4))
    day = fire_times(Cron("*/15 * * * *", zone), at(local_midnight) - timedelta(seconds=1), 120)
    assert sum(1 for t in day if local_date(t, zone) == at(local_midnight).date()) == quarters


def test_lord_howe_half_hour_fold_runs_half_past_twice_thirty_minutes_apart() -> None:
    found = times(Cron("30 * * * *", "Australia/Lord_Howe"), "2026-04-05T00:00:00+11:00", 4)
    assert found == [
        at("2026-04-05T00:30:00+11:00"),
        at("2026-04-05T01:30:00+11:00"),
        at("2026-04-05T01:30:00+10:30"),  # 30 minutes later, the clock shows it again
        at("2026-04-05T02:30:00+10:30"),
    ]


def test_lord_howe_half_hour_gap_keeps_half_past_two() -> None:
    # 02:00-02:29 do not exist; 02:30 does, 30 minutes after 01:30.
    found = times(Cron("30 * * * *", "Australia/Lord_Howe"), "2026-10-04T00:00:00+10:30", 4)
    assert found == [
        at("2026-10-04T00:30:00+10:30"),
        at("2026-10-04T01:30:00+10:30"),
        at("2026-10-04T02:30:00+11:00"),
        at("2026-10-04T03:30:00+11:00"),
    ]


def test_lord_howe_every_15_minutes_drops_the_missing_half_hour() -> None:
    found = times(Cron("*/15 * * * *", "Australia/Lord_Howe"), "2026-10-04T01:40:00+10:30", 3)
    assert found == [
        at("2026-10-04T01:45:00+10:30"),
        at("2026-10-04T02:30:00+11:00"),  # 15 real minutes after 01:45
        at("2026-10-04T02:45:00+11:00"),
    ]


def test_non_fixed_hour_field_runs_both_passes() -> None:
    # '* 1 * * *' is not fixed-time: every minute of both 01:xx hours.
    found = times(Cron("* 1 * * *", "America/New_York"), "2026-11-01T00:59:00-04:00", 121)
    on_the_day = [t for t in found if local_date(t, "America/New_York") == date(2026, 11, 1)]
    assert len(on_the_day) == 120
    assert found[59] == at("2026-11-01T01:59:00-04:00")
    assert found[60] == at("2026-11-01T01:00:00-05:00")


def test_non_fixed_has_nothing_in_the_gap() -> None:
    found = times(Cron("* 2 * * *", "America/New_York"), "2026-03-07T12:00:00-05:00", 61)
    # 8 March has no 02:xx at all (and no shift: not fixed-time), so 9 March is next.
    assert found[0] == at("2026-03-09T02:00:00-04:00")
    assert found[59] == at("2026-03-09T02:59:00-04:00")
    assert found[60] == at("2026-03-10T02:00:00-04:00")


def test_six_field_seconds_follow_fixed_time_rules() -> None:
    # Six fields with a fixed minute and hour are fixed-time: seconds do not change that.
    cron = Cron("*/30 30 1 * * *", "America/New_York")
    found = times(cron, "2026-11-01T01:00:00-04:00", 3)
    assert found == [
        at("2026-11-01T01:30:00-04:00"),
        at("2026-11-01T01:30:30-04:00"),
        at("2026-11-02T01:30:00-05:00"),
    ]
    shifted = times(Cron("15 30 2 * * *", "America/New_York"), "2026-03-08T00:00:00-05:00", 1)
    assert shifted == [at("2026-03-08T03:00:00-04:00")]


def test_six_field_seconds_from_inside_the_fold() -> None:
    # cronsim can answer a time before the start here; the answer must be strictly after.
    after = at("2026-11-01T01:30:10-05:00")
    found = next_fire_time(Cron("*/20 * * * * *", "America/New_York"), after)
    assert found == at("2026-11-01T01:30:20-05:00")
