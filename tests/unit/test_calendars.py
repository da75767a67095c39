"""Calendars' rules: the day an occurrence falls on in the calendar's zone, the claim's SKIPPED
(CALENDAR) records, max_runs not counting them, a preview's marks and an explanation's words."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from duetime_core.calendars import (
    CalendarRecord,
    CalendarRules,
    DateRange,
    Weekday,
    YearlyDate,
    business_days,
    check_rules,
    excluded_by,
    job_calendar_problems,
    job_calendars,
)
from duetime_core.claim_plan import PlannedRun, plan_claim
from duetime_core.errors import InvalidArgument
from duetime_core.jobspec import Every, HttpMethod, HttpTarget, JobSpec, JobState
from duetime_core.planning import Occurrence
from duetime_core.preview import job_preview
from duetime_core.records import RunReason, RunState
from duetime_core.schedule.model import Cron
from duetime_infra.codec.calendar_codec import (
    decode_calendar,
    encode_calendar,
    rules_from_json,
    rules_to_json,
)

JOB = uuid.UUID("00000000-0000-0000-0000-000000000034")
TARGET = HttpTarget(HttpMethod.POST, "https://x.test/")
DAY = timedelta(days=1)
LOOKAHEAD = timedelta(seconds=10)
NOW = datetime(2026, 12, 6, 14, tzinfo=UTC)


def daily(hour: int = 9, zone: str = "UTC", max_runs: int | None = None) -> JobSpec:
    return JobSpec(
        display_name="",
        schedule=Cron(f"0 {hour} * * *", zone),
        target=TARGET,
        max_runs=max_runs,
        excluded_calendars=("holidays",),
    )


def test_a_rule_reads_the_day_in_the_calendars_zone_not_utc() -> None:
    # 2026-12-25 02:00 UTC is still Christmas Eve in New York, and Christmas in Tokyo.
    instant = datetime(2026, 12, 25, 2, 0, tzinfo=UTC)
    christmas = frozenset({date(2026, 12, 25)})
    assert not CalendarRules("America/New_York", dates=christmas).excludes(instant)
    assert CalendarRules("Asia/Tokyo", dates=christmas).excludes(instant)
    assert CalendarRules("UTC", dates=christmas).excludes(instant)


def test_each_kind_of_rule() -> None:
    rules = CalendarRules(
        "Europe/London",
        weekdays=frozenset({Weekday.SUNDAY}),
        dates=frozenset({date(2026, 5, 4)}),
        ranges=(DateRange(date(2026, 8, 11), date(2026, 8, 13)),),
        yearly=frozenset({YearlyDate(1, 1), YearlyDate(2, 29)}),
    )
    assert rules.excludes_day(date(2026, 5, 3))  # a Sunday
    assert rules.excludes_day(date(2026, 5, 4))
    assert not rules.excludes_day(date(2026, 5, 5))
    # Monday 10th to Friday 14th: the range covers Tuesday to Thursday.
    assert [rules.excludes_day(date(2026, 8, d)) for d in range(10, 15)] == [
        False,
        True,
        True,
        True,
        False,
    ]
    assert rules.excludes_day(date(2031, 1, 1))
    # February 29 names a day in leap years only: its neighbours never.
    assert rules.excludes_day(date(2028, 2, 29))
    assert not rules.excludes_day(date(2029, 2, 28))
    assert not rules.excludes_day(date(2029, 3, 1))


def test_business_days_exclude_weekends_and_the_holidays() -> None:
    rules = business_days("America/New_York", [date(2026, 12, 25)])
    friday_christmas = datetime(2026, 12, 25, 15, 0, tzinfo=UTC)
    saturday = datetime(2026, 12, 26, 15, 0, tzinfo=UTC)
    monday = datetime(2026, 12, 28, 15, 0, tzinfo=UTC)
    assert rules.excludes(friday_christmas)
    assert rules.excludes(saturday)
    assert not rules.excludes(monday)


def test_the_first_calendar_in_the_jobs_order_is_named() -> None:
    known = {
        "weekends": CalendarRules("UTC", weekdays=frozenset({Weekday.SATURDAY})),
        "holidays": CalendarRules("UTC", dates=frozenset({date(2026, 6, 6)})),
    }
    calendars = job_calendars(["holidays", "gone", "weekends"], known)
    assert [name for name, _ in calendars] == ["holidays", "weekends"]
    saturday = datetime(2026, 6, 6, 12, tzinfo=UTC)
    assert excluded_by(calendars, saturday) == "holidays"
    assert excluded_by(calendars, saturday - DAY) is None


def test_bad_rules_are_refused_naming_each_field() -> None:
    bad = CalendarRules(
        "Mars/Olympus",
        ranges=(DateRange(date(2026, 1, 5), date(2026, 1, 4)),),
        yearly=frozenset({YearlyDate(2, 30), YearlyDate(13, 1)}),
    )
    with pytest.raises(InvalidArgument) as caught:
        check_rules(bad)
    fields = {v.field for v in caught.value.violations}
    assert fields == {
        "calendar.time_zone",
        "calendar.date_ranges[0].end_date",
        "calendar.yearly_dates",
    }
    assert "02-30: day must be 1 to 29" in str(caught.value)


def test_a_jobs_calendar_names_are_checked() -> None:
    problems = job_calendar_problems(["ok-name", "Bad_Name", "ok-name"])
    assert [p.field for p in problems] == ["excluded_calendars[1]", "excluded_calendars[2]"]


def test_the_claim_records_an_excluded_occurrence_skipped_with_its_calendar() -> None:
    holiday = datetime(2026, 12, 25, 9, tzinfo=UTC)
    calendars = [("holidays", CalendarRules("UTC", dates=frozenset({holiday.date()})))]
    plan = plan_claim(JOB, daily(), Occurrence(holiday, holiday), holiday, LOOKAHEAD, 0, calendars)
    assert [(r.state, r.reason, r.detail, r.nominal_time) for r in plan.runs] == [
        (RunState.SKIPPED, RunReason.CALENDAR, "holidays", holiday)
    ]
    assert plan.made == []
    assert plan.next is not None
    assert plan.next.nominal_time == holiday + DAY
    # The same claim without the calendar runs it: a job without calendars is unchanged.
    plain = plan_claim(JOB, daily(), Occurrence(holiday, holiday), holiday, LOOKAHEAD, 0)
    assert [r.state for r in plain.runs] == [RunState.QUEUED]


def test_a_backlog_of_excluded_days_is_one_record_per_stretch() -> None:
    first = datetime(2026, 12, 20, 9, tzinfo=UTC)
    now = first + 9 * DAY + timedelta(seconds=1)
    rules = CalendarRules("UTC", ranges=(DateRange(date(2026, 12, 24), date(2026, 12, 26)),))
    plan = plan_claim(JOB, daily(), Occurrence(first, first), now, LOOKAHEAD, 0, [("hol", rules)])
    calendar = [r for r in plan.runs if r.reason is RunReason.CALENDAR]
    assert [(r.nominal_time, r.range_end_time, r.occurrence_count) for r in calendar] == [
        (datetime(2026, 12, 24, 9, tzinfo=UTC), datetime(2026, 12, 26, 9, tzinfo=UTC), 3)
    ]
    # The misfire policy (RUN_ONCE) sees only the days no calendar excludes.
    missed = [r for r in plan.runs if r.state is RunState.MISSED]
    assert sum(r.occurrence_count for r in missed) == 9 - 3
    assert [r.nominal_time for r in plan.made] == [datetime(2026, 12, 29, 9, tzinfo=UTC)]


def test_excluded_occurrences_do_not_count_toward_max_runs() -> None:
    start = datetime(2026, 12, 24, 9, tzinfo=UTC)
    rules = CalendarRules("UTC", dates=frozenset({date(2026, 12, 25)}))
    calendars = [("holidays", rules)]
    spec = daily(max_runs=2)
    made = 0
    pending: Occurrence | None = Occurrence(start, start)
    records: list[PlannedRun] = []
    state = JobState.ACTIVE
    while state is JobState.ACTIVE and pending is not None:
        now = pending.nominal_time
        plan = plan_claim(JOB, spec, pending, now, LOOKAHEAD, made, calendars)
        records += plan.runs
        made += len(plan.made)
        pending, state = plan.next, plan.state
    assert state is JobState.COMPLETED
    assert [(r.nominal_time.day, r.state) for r in records] == [
        (24, RunState.QUEUED),
        (25, RunState.SKIPPED),
        (26, RunState.QUEUED),
    ]


def test_a_preview_marks_exclusions_without_counting_them_as_runs() -> None:
    start = datetime(2026, 12, 24, 0, tzinfo=UTC)
    rules = CalendarRules("UTC", dates=frozenset({date(2026, 12, 25)}))
    items = job_preview(JOB, daily(max_runs=2), 0, start, 10, [("holidays", rules)])
    assert [(i.nominal_time.day, i.excluded_by) for i in items] == [
        (24, ""),
        (25, "holidays"),
        (26, ""),
    ]


def test_an_interval_job_across_a_zones_midnight() -> None:
    # Hourly in UTC, a calendar in Sydney excluding 2026-07-01 there: 14:00Z on June 30 to
    # 13:00Z on July 1 (UTC+10 in July).
    anchor = datetime(2026, 6, 30, 12, tzinfo=UTC)
    spec = JobSpec(
        display_name="",
        schedule=Every(timedelta(hours=1), None, anchor),
        target=TARGET,
        excluded_calendars=("aus",),
    )
    rules = CalendarRules("Australia/Sydney", dates=frozenset({date(2026, 7, 1)}))
    items = job_preview(JOB, spec, 0, anchor, 30, [("aus", rules)])
    excluded = [i.nominal_time for i in items if i.excluded_by]
    assert excluded[0] == datetime(2026, 6, 30, 14, tzinfo=UTC)
    assert excluded[-1] == datetime(2026, 7, 1, 13, tzinfo=UTC)
    assert len(excluded) == 24


@given(
    zone=st.sampled_from(["UTC", "America/New_York", "Australia/Lord_Howe"]),
    weekdays=st.frozensets(st.sampled_from(list(Weekday))),
    dates=st.frozensets(st.dates(date(1, 1, 1), date(9999, 12, 31)), max_size=5),
    spans=st.lists(st.tuples(st.dates(), st.integers(0, 30)), max_size=3),
    yearly=st.frozensets(
        st.sampled_from([YearlyDate(2, 29), YearlyDate(12, 25), YearlyDate(1, 1)])
    ),
    description=st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=50),
)
def test_rules_round_trip_through_the_message_and_the_stored_document(
    zone: str,
    weekdays: frozenset[Weekday],
    dates: frozenset[date],
    spans: list[tuple[date, int]],
    yearly: frozenset[YearlyDate],
    description: str,
) -> None:
    ranges = tuple(
        DateRange(first, first + timedelta(days=days))
        for first, days in spans
        if first <= date(9999, 12, 31) - timedelta(days=days)
    )
    rules = CalendarRules(zone, weekdays, dates, ranges, yearly, description)
    record = CalendarRecord("team-a", "cal", rules, 1, NOW, NOW)
    assert decode_calendar(encode_calendar(record)) == rules
    assert rules_from_json(json.loads(json.dumps(rules_to_json(rules)))) == rules
