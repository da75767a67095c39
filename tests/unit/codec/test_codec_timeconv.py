"""Timestamp/Duration <-> datetime/timedelta, and the local-time text form."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import given
from hypothesis import strategies as st

from duetime_infra.codec.timeconv import (
    DURATION_MAX_SECONDS,
    TIMESTAMP_MAX_SECONDS,
    TIMESTAMP_MIN_SECONDS,
    datetime_to_timestamp,
    duration_to_timedelta,
    format_local_time,
    format_rfc3339_utc,
    parse_local_time,
    parse_rfc3339_utc,
    timedelta_to_duration,
    timestamp_to_datetime,
)

INSTANTS = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999999)
).map(lambda d: d.replace(tzinfo=UTC))
SPANS = st.timedeltas(
    min_value=timedelta(seconds=-DURATION_MAX_SECONDS),
    max_value=timedelta(seconds=DURATION_MAX_SECONDS),
)


@given(INSTANTS)
def test_timestamp_round_trip(dt: datetime) -> None:
    ts = datetime_to_timestamp(dt)
    assert 0 <= ts.nanos < 1_000_000_000
    assert ts.nanos % 1000 == 0
    assert timestamp_to_datetime(ts) == dt


def test_timestamp_matches_protobuf() -> None:
    dt = datetime(2026, 10, 26, 20, 30, 0, 123456, tzinfo=UTC)
    ts = datetime_to_timestamp(dt)
    assert ts.ToJsonString() == "2026-10-26T20:30:00.123456Z"
    assert timestamp_to_datetime(ts).utcoffset() == timedelta(0)


def test_timestamp_fills_out_message() -> None:
    out = Timestamp()
    returned = datetime_to_timestamp(datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC), out)
    assert returned is out
    assert out.seconds == 1


def test_timestamp_of_other_offsets_is_the_same_instant() -> None:
    from zoneinfo import ZoneInfo

    local = datetime(2026, 7, 1, 12, tzinfo=ZoneInfo("Europe/Paris"))
    assert timestamp_to_datetime(datetime_to_timestamp(local)) == local


def test_timestamp_nanos_round_down() -> None:
    ts = Timestamp(seconds=0, nanos=999_999_999)
    assert timestamp_to_datetime(ts) == datetime(1970, 1, 1, 0, 0, 0, 999999, tzinfo=UTC)
    # Before the epoch nanos still count forward from seconds.
    ts = Timestamp(seconds=-1, nanos=1_500)
    assert timestamp_to_datetime(ts) == datetime(1969, 12, 31, 23, 59, 59, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    "ts",
    [
        Timestamp(seconds=TIMESTAMP_MAX_SECONDS + 1),
        Timestamp(seconds=TIMESTAMP_MIN_SECONDS - 1),
        Timestamp(seconds=0, nanos=-1),
        Timestamp(seconds=0, nanos=1_000_000_000),
        Timestamp(seconds=2**62),
    ],
)
def test_invalid_timestamps(ts: Timestamp) -> None:
    with pytest.raises(ValueError, match="timestamp"):
        timestamp_to_datetime(ts)


def test_timestamp_extremes() -> None:
    assert timestamp_to_datetime(Timestamp(seconds=TIMESTAMP_MIN_SECONDS)) == datetime(
        1, 1, 1, tzinfo=UTC
    )
    top = Timestamp(seconds=TIMESTAMP_MAX_SECONDS, nanos=999_999_999)
    assert timestamp_to_datetime(top) == datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)


def test_naive_datetime_is_refused() -> None:
    with pytest.raises(ValueError, match="naive"):
        datetime_to_timestamp(datetime(2026, 1, 1))


@given(SPANS)
def test_duration_round_trip(td: timedelta) -> None:
    d = timedelta_to_duration(td)
    assert (d.seconds >= 0 and d.nanos >= 0) or (d.seconds <= 0 and d.nanos <= 0)
    assert duration_to_timedelta(d) == td
    assert d.ToTimedelta() == td  # the same value protobuf's own helper reads


def test_duration_sub_microsecond_rounds_down() -> None:
    assert duration_to_timedelta(Duration(seconds=1, nanos=999)) == timedelta(seconds=1)
    assert duration_to_timedelta(Duration(seconds=0, nanos=1500)) == timedelta(microseconds=1)
    # Down, not toward zero: a negative sliver stays negative and fails ">= 0" checks.
    assert duration_to_timedelta(Duration(seconds=0, nanos=-1)) == timedelta(microseconds=-1)


def test_negative_duration() -> None:
    d = Duration(seconds=-1, nanos=-500_000_000)
    assert duration_to_timedelta(d) == timedelta(seconds=-1.5)
    assert timedelta_to_duration(timedelta(seconds=-1.5)) == d


@pytest.mark.parametrize(
    ("d", "match"),
    [
        (Duration(seconds=DURATION_MAX_SECONDS + 1), "range"),
        (Duration(seconds=-DURATION_MAX_SECONDS - 1), "range"),
        (Duration(seconds=-(2**63)), "range"),
        (Duration(nanos=1_000_000_000), "nanos"),
        (Duration(nanos=-1_000_000_000), "nanos"),
        (Duration(seconds=1, nanos=-1), "sign"),
        (Duration(seconds=-1, nanos=1), "sign"),
    ],
)
def test_invalid_durations(d: Duration, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        duration_to_timedelta(d)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-12-24T09:00", datetime(2026, 12, 24, 9, 0)),
        ("2026-12-24T09:00:05", datetime(2026, 12, 24, 9, 0, 5)),
        ("2026-12-24T09:00:05.5", datetime(2026, 12, 24, 9, 0, 5, 500000)),
        ("2026-12-24T09:00:05.000001", datetime(2026, 12, 24, 9, 0, 5, 1)),
        ("0001-01-01T00:00", datetime(1, 1, 1)),
    ],
)
def test_parse_local_time(text: str, expected: datetime) -> None:
    parsed = parse_local_time(text)
    assert parsed == expected
    assert parsed.tzinfo is None


@pytest.mark.parametrize(
    "text", ["2026-12-24T09:00Z", "2026-12-24T09:00:00+01:00", "2026-12-24T09:00:00.5-0500"]
)
def test_local_time_with_offset_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="run_time"):
        parse_local_time(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "2026-12-24",
        "2026-12-24 09:00",
        "2026-12-24t09:00",
        " 2026-12-24T09:00",
        "2026-12-24T09:00 ",
        "2026-12-24T9:00",
        "2026-12-24T09:00:00.1234567",
        "2026-12-24T09:00:00.",
        "٢٠٢٦-12-24T09:00",  # Arabic-Indic digits
        "2026-12-24T09:00:00\x00",
    ],
)
def test_malformed_local_time(text: str) -> None:
    with pytest.raises(ValueError, match="expected YYYY-MM-DDTHH:MM"):
        parse_local_time(text)


@pytest.mark.parametrize(
    "text", ["2026-13-01T00:00", "2026-02-29T00:00", "2026-12-24T24:00", "2026-12-24T23:60:00"]
)
def test_impossible_local_time(text: str) -> None:
    with pytest.raises(ValueError, match="not a valid date and time"):
        parse_local_time(text)


@given(st.datetimes())
def test_local_time_round_trip(local: datetime) -> None:
    assert parse_local_time(format_local_time(local)) == local


def test_format_local_time() -> None:
    assert format_local_time(datetime(2026, 12, 24, 9, 0)) == "2026-12-24T09:00:00"
    assert format_local_time(datetime(2026, 12, 24, 9, 0, 0, 50)) == "2026-12-24T09:00:00.000050"


@given(INSTANTS)
def test_rfc3339_round_trip(dt: datetime) -> None:
    text = format_rfc3339_utc(dt)
    assert text.endswith("Z")
    assert len(text) == len("2026-10-26T20:30:00.000000Z")
    assert parse_rfc3339_utc(text) == dt


def test_rfc3339_pads_early_years() -> None:
    assert format_rfc3339_utc(datetime(5, 1, 2, tzinfo=UTC)) == "0005-01-02T00:00:00.000000Z"
