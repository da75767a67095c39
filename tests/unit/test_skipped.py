"""The stretches of occurrences recorded as SKIPPED: inclusive of the start, bounded, and a
schedule that cannot be evaluated is an error, never an empty stretch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from duetime_core.planning import Occurrence, ScheduleError
from duetime_core.schedule.model import Cron, GapPolicy, Interval
from duetime_core.skipped import MAX_SKIPPED_ENUMERATION, SkippedSpan, dst_gap_span, skipped_between

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
MINUTELY = Interval(every=timedelta(minutes=1), anchor=T0)


def test_a_stretch_counts_from_its_start_inclusive_to_now() -> None:
    span = skipped_between(MINUTELY, T0, T0 + timedelta(minutes=9, seconds=30))
    assert span == SkippedSpan(T0, T0 + timedelta(minutes=9), 10)


def test_no_occurrence_in_the_stretch_is_no_span() -> None:
    assert skipped_between(MINUTELY, T0 + timedelta(seconds=1), T0 + timedelta(seconds=59)) is None


def test_a_long_stretch_is_cut_at_the_enumeration_cap() -> None:
    every_second = Interval(every=timedelta(seconds=1), anchor=T0)
    span = skipped_between(every_second, T0, T0 + timedelta(days=30))
    assert span is not None
    assert span.count == MAX_SKIPPED_ENUMERATION
    assert span.last == T0 + timedelta(seconds=MAX_SKIPPED_ENUMERATION - 1)


def test_a_schedule_that_cannot_be_evaluated_raises_instead_of_skipping_nothing() -> None:
    broken = Cron(expression="0 2 * * *", time_zone="Not/AZone")
    with pytest.raises(ScheduleError, match="cannot compute the next fire time"):
        skipped_between(broken, T0, T0 + timedelta(days=2))


def test_the_gap_span_names_what_a_skip_gap_jumped_over() -> None:
    daily_230 = Cron(expression="30 2 * * *", time_zone="Europe/Berlin", gap=GapPolicy.SKIP)
    before_gap = datetime(2026, 3, 28, 12, tzinfo=UTC)
    first = Occurrence(datetime(2026, 3, 30, 0, 30, tzinfo=UTC), datetime(2026, 3, 30, 0, 30))
    gap = datetime(2026, 3, 29, 1, 0, tzinfo=UTC)  # 02:30 does not exist; SHIFT would be 03:00
    assert dst_gap_span(daily_230, before_gap, first) == SkippedSpan(gap, gap, 1)
    assert dst_gap_span(daily_230, before_gap, None) is None
    assert dst_gap_span(MINUTELY, T0, first) is None
