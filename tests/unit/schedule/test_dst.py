"""resolve_local: wall-clock times to instants across DST gaps and folds, in several zones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from duetime_core.schedule import load_zone
from duetime_core.schedule.dst import resolve_local, transitions_between
from duetime_core.schedule.model import FoldPolicy, GapPolicy

NY = "America/New_York"


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, us: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, us, tzinfo=UTC)


def test_ordinary_time() -> None:
    assert resolve_local(datetime(2026, 7, 1, 12, 0), "Europe/London", None, None) == utc(
        2026, 7, 1, 11, 0
    )


def test_microseconds_are_kept() -> None:
    local = datetime(2026, 1, 15, 9, 30, 15, 123456)
    assert resolve_local(local, NY, None, None) == utc(2026, 1, 15, 14, 30, 15, 123456)


def test_result_is_utc() -> None:
    result = resolve_local(datetime(2026, 7, 1, 12, 0), "Asia/Kolkata", None, None)
    assert result is not None
    assert result.utcoffset() == timedelta(0)
    assert result == utc(2026, 7, 1, 6, 30)


@pytest.mark.parametrize("gap", [None, GapPolicy.SHIFT])
def test_gap_shifts_to_first_instant_after_it(gap: GapPolicy | None) -> None:
    # 2026-03-08: New York jumps 02:00 EST -> 03:00 EDT, i.e. at 07:00 UTC.
    result = resolve_local(datetime(2026, 3, 8, 2, 30), NY, gap, None)
    assert result == utc(2026, 3, 8, 7, 0)


def test_gap_shift_ignores_the_local_fraction() -> None:
    # Every time in the gap maps to the same instant: the end of the gap.
    result = resolve_local(datetime(2026, 3, 8, 2, 59, 59, 999999), NY, None, None)
    assert result == utc(2026, 3, 8, 7, 0)
    assert resolve_local(datetime(2026, 3, 8, 2, 0), NY, None, None) == utc(2026, 3, 8, 7, 0)


def test_gap_skip_gives_none() -> None:
    assert resolve_local(datetime(2026, 3, 8, 2, 30), NY, GapPolicy.SKIP, None) is None


def test_skip_outside_a_gap_resolves_normally() -> None:
    result = resolve_local(datetime(2026, 3, 8, 3, 0), NY, GapPolicy.SKIP, None)
    assert result == utc(2026, 3, 8, 7, 0)


@pytest.mark.parametrize(
    ("fold", "expected"),
    [
        (None, utc(2026, 11, 1, 5, 30)),  # 01:30 EDT
        (FoldPolicy.FIRST, utc(2026, 11, 1, 5, 30)),
        (FoldPolicy.LAST, utc(2026, 11, 1, 6, 30)),  # 01:30 EST
    ],
)
def test_fold(fold: FoldPolicy | None, expected: datetime) -> None:
    assert resolve_local(datetime(2026, 11, 1, 1, 30), NY, None, fold) == expected


def test_fold_both_is_refused_even_outside_a_fold() -> None:
    with pytest.raises(ValueError, match="BOTH"):
        resolve_local(datetime(2026, 11, 1, 1, 30), NY, None, FoldPolicy.BOTH)
    with pytest.raises(ValueError, match="BOTH"):
        resolve_local(datetime(2026, 7, 1, 12, 0), NY, None, FoldPolicy.BOTH)


def test_southern_hemisphere_gap() -> None:
    # Sydney springs forward on 2026-10-04 02:00 AEST (+10) -> 03:00 AEDT: 16:00 UTC the day before.
    result = resolve_local(datetime(2026, 10, 4, 2, 30), "Australia/Sydney", None, None)
    assert result == utc(2026, 10, 3, 16, 0)


def test_half_hour_shift_lord_howe() -> None:
    zone = "Australia/Lord_Howe"  # +10:30 -> +11:00 at 02:00 local
    result = resolve_local(datetime(2026, 10, 4, 2, 15), zone, None, None)
    assert result == utc(2026, 10, 3, 15, 30)
    first = resolve_local(datetime(2026, 4, 5, 1, 45), zone, None, FoldPolicy.FIRST)
    last = resolve_local(datetime(2026, 4, 5, 1, 45), zone, None, FoldPolicy.LAST)
    assert first is not None
    assert last is not None
    assert last - first == timedelta(minutes=30)


def test_negative_dst_dublin() -> None:
    # tzdata models Irish winter time as the negative "DST"; the fold is still a fold.
    first = resolve_local(datetime(2026, 10, 25, 1, 30), "Europe/Dublin", None, FoldPolicy.FIRST)
    last = resolve_local(datetime(2026, 10, 25, 1, 30), "Europe/Dublin", None, FoldPolicy.LAST)
    assert first == utc(2026, 10, 25, 0, 30)
    assert last == utc(2026, 10, 25, 1, 30)


def test_zone_without_dst() -> None:
    assert resolve_local(datetime(2026, 3, 8, 2, 30), "UTC", GapPolicy.SKIP, None) == utc(
        2026, 3, 8, 2, 30
    )


def test_aware_local_time_is_refused() -> None:
    with pytest.raises(ValueError, match="naive"):
        resolve_local(utc(2026, 1, 1), NY, None, None)


@pytest.mark.parametrize("zone", ["", "Mars/Olympus", "America", "../etc/passwd", "UTC\x00"])
def test_unknown_zone(zone: str) -> None:
    with pytest.raises(ValueError, match="unknown time zone"):
        resolve_local(datetime(2026, 1, 1), zone, None, None)


@pytest.mark.parametrize(
    ("local", "zone"),
    [(datetime(1, 1, 1), "Asia/Tokyo"), (datetime(9999, 12, 31, 23, 59), "America/New_York")],
)
def test_out_of_range(local: datetime, zone: str) -> None:
    with pytest.raises(ValueError, match="out of range"):
        resolve_local(local, zone, None, None)


ZONES = [
    "America/New_York",
    "Europe/London",
    "Europe/Dublin",
    "Australia/Lord_Howe",
    "Australia/Sydney",
    "America/Santiago",
    "Asia/Tehran",
    "Pacific/Apia",
    "UTC",
]


def wall(instant: datetime, zone: str) -> datetime:
    return instant.astimezone(load_zone(zone)).replace(tzinfo=None)


def check_resolution(local: datetime, zone: str) -> None:
    first = resolve_local(local, zone, None, FoldPolicy.FIRST)
    last = resolve_local(local, zone, None, FoldPolicy.LAST)
    skipped = resolve_local(local, zone, GapPolicy.SKIP, None)
    assert first is not None
    assert last is not None
    assert first <= last
    if skipped is None:
        # In a gap: SHIFT lands on the first instant after it, which reads later than the
        # asked time, while the instant just before reads earlier.
        assert first == last
        assert wall(first, zone) > local
        assert wall(first - timedelta(microseconds=1), zone) < local
    else:
        # Exists, once or twice: both passes read as the asked time.
        assert wall(first, zone) == local
        assert wall(last, zone) == local
        assert skipped == first


@given(
    local=st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2100, 1, 1)),
    zone=st.sampled_from(ZONES),
)
def test_every_wall_time_resolves_consistently(local: datetime, zone: str) -> None:
    check_resolution(local, zone)


@given(
    zone=st.sampled_from(ZONES[:-1]),
    year=st.integers(1970, 2060),
    which=st.integers(0, 1),
    minutes=st.integers(-150, 150),
    micro=st.integers(0, 999_999),
)
def test_wall_times_around_transitions(
    zone: str, year: int, which: int, minutes: int, micro: int
) -> None:
    # Aim at the DST nights themselves: random instants almost never fall in a gap or fold.
    start = utc(year, 1, 1)
    changes = transitions_between(start, utc(year + 1, 1, 1), load_zone(zone))
    if not changes:
        return
    change = changes[which % len(changes)]
    local = wall(change.at, zone) + timedelta(minutes=minutes, microseconds=micro)
    check_resolution(local, zone)
