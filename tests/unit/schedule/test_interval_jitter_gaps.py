"""One-offs, intervals, fire_times, jitter_offset and shortest_gap."""

from __future__ import annotations

import itertools
import statistics
from datetime import UTC, datetime, timedelta, timezone

import pytest

from duetime_core.schedule import (
    Cron,
    FoldPolicy,
    Interval,
    OneOff,
    fire_times,
    jitter_offset,
    next_fire_time,
    shortest_gap,
)

ANCHOR = datetime(2026, 1, 1, tzinfo=UTC)
TOKYO = timezone(timedelta(hours=9))


# ---------------------------------------------------------------- one-off and interval
def test_one_off_fires_once_strictly_after() -> None:
    at = datetime(2026, 3, 1, 9, tzinfo=TOKYO)
    assert next_fire_time(OneOff(at), ANCHOR) == datetime(2026, 3, 1, 0, tzinfo=UTC)
    assert next_fire_time(OneOff(at), at) is None
    assert next_fire_time(OneOff(at), at + timedelta(microseconds=1)) is None
    assert fire_times(OneOff(at), ANCHOR, 3) == [at]


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        (ANCHOR - timedelta(days=400), ANCHOR),  # before the anchor: the anchor itself
        (ANCHOR - timedelta(microseconds=1), ANCHOR),
        (ANCHOR, ANCHOR + timedelta(minutes=90)),  # strictly after
        (ANCHOR + timedelta(minutes=100), ANCHOR + timedelta(minutes=180)),
        (ANCHOR + timedelta(minutes=180), ANCHOR + timedelta(minutes=270)),
    ],
)
def test_interval_steps_from_the_anchor(after: datetime, expected: datetime) -> None:
    assert next_fire_time(Interval(timedelta(minutes=90), ANCHOR), after) == expected


def test_interval_is_exact_over_years() -> None:
    # A third of a second does not drift: k * every in integer microseconds.
    every = timedelta(microseconds=333_333)
    after = ANCHOR + timedelta(days=3650, microseconds=7)
    found = next_fire_time(Interval(every, ANCHOR), after)
    assert found is not None
    steps = (found - ANCHOR) // every
    assert found == ANCHOR + steps * every
    assert found - every <= after < found


def test_interval_ignores_dst_and_answers_in_utc() -> None:
    anchor = datetime(2026, 3, 7, 12, tzinfo=TOKYO)
    found = fire_times(Interval(timedelta(hours=12), anchor), anchor, 3)
    assert [t.isoformat() for t in found] == [
        "2026-03-07T15:00:00+00:00",
        "2026-03-08T03:00:00+00:00",
        "2026-03-08T15:00:00+00:00",
    ]


def test_interval_past_the_end_of_time_is_none() -> None:
    assert (
        next_fire_time(
            Interval(timedelta(days=365), ANCHOR),
            datetime.max.replace(tzinfo=UTC) - timedelta(days=1),
        )
        is None
    )


def test_fire_times_counts() -> None:
    assert fire_times(Cron("* * * * *", "UTC"), ANCHOR, 0) == []
    assert len(fire_times(Cron("* * * * *", "UTC"), ANCHOR, 5)) == 5
    with pytest.raises(ValueError, match="negative"):
        fire_times(Cron("* * * * *", "UTC"), ANCHOR, -1)


def test_cron_near_the_end_of_time_is_none() -> None:
    assert (
        next_fire_time(Cron("0 0 * * *", "Pacific/Kiritimati"), datetime(9999, 12, 31, tzinfo=UTC))
        is None
    )


# ---------------------------------------------------------------- jitter
KEY = "0b6f3a52-7c1e-4a8e-9d3e-2f1c5b7a9e10/2026-10-26T20:30:00Z"


def test_jitter_is_pinned() -> None:
    # A change here moves the effective time of every stored run: it must never happen
    # silently (e.g. by switching hash functions).
    assert jitter_offset(KEY, timedelta(minutes=5)) == timedelta(seconds=15, microseconds=66869)
    assert jitter_offset(
        "0b6f3a52-7c1e-4a8e-9d3e-2f1c5b7a9e10/trigger/req-1", timedelta(minutes=5)
    ) == timedelta(seconds=177, microseconds=241456)


def test_jitter_is_deterministic_and_in_range() -> None:
    window = timedelta(seconds=1)
    offsets = [jitter_offset(f"job/{i}", window) for i in range(2000)]
    assert offsets == [jitter_offset(f"job/{i}", window) for i in range(2000)]
    assert all(timedelta(0) <= o < window for o in offsets)
    # Spread over the window, not clustered: uniform has mean 0.5 s and sd ~0.29 s.
    seconds = [o.total_seconds() for o in offsets]
    assert 0.45 < statistics.fmean(seconds) < 0.55
    assert min(seconds) < 0.01
    assert max(seconds) > 0.99
    assert len(set(offsets)) > 1990


def test_jitter_resolution_is_one_microsecond() -> None:
    assert jitter_offset(KEY, timedelta(0)) == timedelta(0)
    assert jitter_offset(KEY, timedelta(microseconds=1)) == timedelta(0)
    two = {jitter_offset(f"k{i}", timedelta(microseconds=2)) for i in range(50)}
    assert two == {timedelta(0), timedelta(microseconds=1)}
    with pytest.raises(ValueError, match="negative"):
        jitter_offset(KEY, timedelta(seconds=-1))


# ---------------------------------------------------------------- shortest gap
JUNE = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        (OneOff(JUNE), None),
        (Interval(timedelta(seconds=90), ANCHOR), timedelta(seconds=90)),
        (Cron("*/5 * * * *", "UTC"), timedelta(minutes=5)),
        (Cron("0 9 * * MON-FRI", "Europe/Berlin"), timedelta(days=1)),
        (Cron("0 9 * * MON", "UTC"), timedelta(days=7)),
        (Cron("*/10 * * * * *", "America/New_York"), timedelta(seconds=10)),
        (Cron("* * * * * *", "America/New_York"), timedelta(seconds=1)),
        (Cron("0,30 2 * * *", "America/New_York"), timedelta(minutes=30)),
        # Fold BOTH: 01:30 EDT and 01:30 EST on 1 November, an hour apart.
        (Cron("30 1 * * *", "America/New_York", fold=FoldPolicy.BOTH), timedelta(hours=1)),
        # FIRST: the spring-forward night makes the day 23 hours long.
        (Cron("30 1 * * *", "America/New_York"), timedelta(hours=23)),
        # SHIFT: 02:30 EST -> 03:00 EDT (shifted) -> 02:30 EDT.
        (Cron("30 2 * * *", "America/New_York"), timedelta(hours=23, minutes=30)),
        # Lord Howe's 30-minute fold shows 01:30 twice, half an hour apart.
        (Cron("30 * * * *", "Australia/Lord_Howe"), timedelta(minutes=30)),
        # Every three wall hours, real time: 00:00 EST to 03:00 EDT is two hours.
        (Cron("0 */3 * * *", "America/New_York"), timedelta(hours=2)),
        # Leap Februaries starting on a Monday: 2044, then 2072.
        (Cron("0 0 * 2 MON#5", "UTC"), timedelta(days=28 * 365 + 7)),
    ],
)
def test_shortest_gap(schedule: Cron | Interval | OneOff, expected: timedelta | None) -> None:
    assert shortest_gap(schedule, JUNE) == expected


@pytest.mark.parametrize(
    ("schedule", "usual", "shortest"),
    [
        (Cron("30 * * * *", "Australia/Lord_Howe"), timedelta(hours=1), timedelta(minutes=30)),
        (Cron("0 */3 * * *", "America/New_York"), timedelta(hours=3), timedelta(hours=2)),
    ],
)
def test_shortest_gap_sees_dst_nights_beyond_the_first_thousand_occurrences(
    schedule: Cron, usual: timedelta, shortest: timedelta
) -> None:
    # The next thousand occurrences from June end before the first DST night of either zone.
    sample = fire_times(schedule, JUNE, 1000)
    assert {b - a for a, b in itertools.pairwise(sample)} == {usual}
    assert shortest_gap(schedule, JUNE) == shortest
