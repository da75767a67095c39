"""Times on the console's pages: the viewer's wall clock with its zone's abbreviation, UTC
beside it, the exact instant in the element's ``datetime``; DST nights included."""

from __future__ import annotations

from datetime import UTC, datetime

from duetime_console.times import at, local_and_utc, zone_of


def test_a_time_reads_in_the_viewers_zone_with_utc_alongside() -> None:
    moment = datetime(2026, 12, 6, 9, 30, tzinfo=UTC)
    assert local_and_utc(moment, "Europe/Paris") == (
        "2026-12-06 10:30:00 CET",
        "2026-12-06 09:30:00Z",
    )
    assert str(at(moment, "America/New_York")) == (
        '<time datetime="2026-12-06T09:30:00.000000Z">2026-12-06 04:30:00 EST</time> '
        '<span class="utc">2026-12-06 09:30:00Z</span>'
    )


def test_a_viewer_in_utc_sees_one_time() -> None:
    moment = datetime(2026, 12, 6, 9, 30, 0, 250_000, tzinfo=UTC)
    assert str(at(moment, "UTC")) == (
        '<time datetime="2026-12-06T09:30:00.250000Z">2026-12-06 09:30:00.250Z</time>'
    )


def test_both_passes_of_a_fall_back_hour_read_apart() -> None:
    first = datetime(2026, 11, 1, 5, 30, tzinfo=UTC)
    second = datetime(2026, 11, 1, 6, 30, tzinfo=UTC)
    assert local_and_utc(first, "America/New_York")[0] == "2026-11-01 01:30:00 EDT"
    assert local_and_utc(second, "America/New_York")[0] == "2026-11-01 01:30:00 EST"


def test_an_unknown_zone_reads_as_utc() -> None:
    assert zone_of("Mars/Olympus_Mons").key == "UTC"
    assert zone_of("../../etc/passwd").key == "UTC"
