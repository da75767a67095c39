"""previous_fire_time: the latest occurrence strictly before an instant, found by bisecting the
one time function, agrees with walking that function forward."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from duetime_core.schedule import Cron, Interval, OneOff, next_fire_time
from duetime_core.schedule.previous import previous_fire_time
from testkit.properties import examples
from tests.unit.schedule.test_schedule_properties import ALL_EXPRESSIONS, schedules, starts

TINY = timedelta(microseconds=1)


@settings(max_examples=examples(300), deadline=None)
@given(data=st.data())
def test_the_previous_occurrence_is_one_and_none_lies_between(data: st.DataObject) -> None:
    cron: Cron = data.draw(schedules(ALL_EXPRESSIONS))
    before = data.draw(starts(cron.time_zone))
    found = previous_fire_time(cron, before)
    assert found is not None  # every expression here fires every year
    assert found < before
    assert next_fire_time(cron, found - TINY) == found
    following = next_fire_time(cron, found)
    assert following is None or following >= before


@given(
    every=st.integers(1, 10**7).map(lambda s: timedelta(seconds=s, microseconds=s % 7)),
    gap=st.integers(-(10**9), 10**9).map(lambda us: timedelta(microseconds=us * 997)),
)
def test_an_interval_steps_back_to_its_last_tick(every: timedelta, gap: timedelta) -> None:
    anchor = datetime(2026, 6, 1, 12, 0, 0, 123456, tzinfo=UTC)
    before = anchor + gap
    found = previous_fire_time(Interval(every, anchor), before)
    if before <= anchor:
        assert found is None
        return
    ticks = (before - anchor - TINY) // every
    assert found == anchor + ticks * every


def test_a_one_off_has_one_occurrence_before_it_or_none() -> None:
    at = datetime(2026, 3, 8, 7, tzinfo=UTC)
    assert previous_fire_time(OneOff(at), at) is None
    assert previous_fire_time(OneOff(at), at + TINY) == at
    assert previous_fire_time(OneOff(at), datetime(2999, 1, 1, tzinfo=UTC)) == at


def test_the_spring_forward_night_steps_back_over_the_gap() -> None:
    shifted = Cron("30 2 * * *", "America/New_York")
    after_gap = datetime(2026, 3, 8, 7, 0, 1, tzinfo=UTC)
    assert previous_fire_time(shifted, after_gap) == datetime(2026, 3, 8, 7, tzinfo=UTC)
