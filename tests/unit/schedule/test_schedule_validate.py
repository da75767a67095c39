"""validate(): every bad field named, relative to the schedule, with a usable description."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from duetime_core.errors import FieldViolation, InvalidArgument
from duetime_core.schedule import (
    Cron,
    FoldPolicy,
    GapPolicy,
    Interval,
    OneOff,
    Schedule,
    is_fixed_time,
    jitter_window_violations,
    next_fire_time,
    validate,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def violations(schedule: Schedule) -> list[FieldViolation]:
    with pytest.raises(InvalidArgument) as caught:
        validate(schedule)
    assert caught.value.reason == "INVALID_ARGUMENT"
    return caught.value.violations


def only(schedule: Schedule) -> FieldViolation:
    found = violations(schedule)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    "schedule",
    [
        OneOff(NOW),
        Interval(timedelta(seconds=1), NOW),
        Cron("*/5 * * * *", "Europe/Paris"),
        Cron("30 2 * * *", "America/New_York", gap=GapPolicy.SKIP, fold=FoldPolicy.BOTH),
        Cron("0 0 L * *", "UTC"),
        Cron("0 9 15W,LW * *", "Asia/Tokyo"),
        Cron("0 0 * * 5L,1#2", "UTC"),
        Cron("0 0 ? * MON", "UTC"),
        Cron("0 0 * 2 MON#5", "UTC"),  # rare (a leap February starting Monday) but real
        Cron("15 30 2 * * *", "US/Eastern"),  # tzdata links are accepted
    ],
)
def test_good_schedules_pass(schedule: Schedule) -> None:
    validate(schedule)


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("* * * *", "expected 5 fields"),
        ("* * * * * * *", "got 7"),
        ("", "got 0"),
        ("60 * * * *", "minute field '60': 60 is out of range 0-59"),
        ("0 24 * * *", "hour field '24': 24 is out of range 0-23"),
        ("0 0 0 * *", "day-of-month field '0': 0 is out of range 1-31"),
        ("0 0 32 * *", "out of range 1-31"),
        ("0 0 * 13 *", "month field '13'"),
        ("0 0 * * 8", "day-of-week field '8': 8 is out of range 0-7"),
        ("60 * * * * *", "second field '60'"),
        ("0 0 * JANX *", "'JANX' is neither a number nor a name"),
        ("0 0 * * MONDAY", "'MONDAY' is neither a number nor a name"),
        ("0 MON * * *", "'MON' is not a number"),
        ("*/0 * * * *", "step must be at least 1"),
        ("*/x * * * *", "step 'x' is not a number"),
        ("1,,2 * * * *", "empty item"),
        ("50-10 * * * *", "runs backwards; write it as two items, e.g. '50-59,0-10'"),
        ("0 0 W * *", "W follows a single day"),
        ("0 0 1-5W * *", "W follows a single day"),
        ("0 0 32W * *", "32 is out of range 1-31"),
        ("0 0 * * 15W", "W belongs in the day-of-month field"),
        ("0 0 5L * *", "use L, LW or nW"),
        ("0 0 L/2 * *", "use L, LW or nW"),
        ("0 0 * * L", "'L' alone belongs in day-of-month"),
        ("0 0 * * 1-5L", "L follows a single weekday"),
        ("0 0 * * 1#6", "after '#' comes a week number 1-5"),
        ("0 0 * * 1#0", "after '#' comes a week number 1-5"),
        ("0 0 * * MON#", "after '#' comes a week number 1-5"),
        ("0 0 * * #2", "missing value"),
        ("0 0 1#2 * *", "'#' belongs in the day-of-week field"),
        ("0 0 1,? * *", "'?' must stand alone"),
        ("? 0 * * *", "'?' is not a number"),
        ("0 0 30 2 *", "never matches"),
        ("0 0 31 4,6,9,11 *", "never matches"),
        ("0 0 30W 2 *", "never matches"),
        ("@daily", "macros such as @daily are not supported"),
        ("0," * 600 + "0 * * * *", "longer than 1024 characters"),
    ],
)
def test_bad_expression_is_named_and_explained(expression: str, words: str) -> None:
    found = violations(Cron(expression, "UTC"))
    assert {v.field for v in found} == {"expression"}
    assert any(words in v.description for v in found), found


def test_every_bad_cron_field_is_reported_at_once() -> None:
    found = violations(Cron("60 24 0 13 8", "UTC"))
    assert [v.field for v in found] == ["expression"] * 5
    assert [v.description.split(" field")[0] for v in found] == [
        "minute",
        "hour",
        "day-of-month",
        "month",
        "day-of-week",
    ]


@pytest.mark.parametrize(
    ("zone", "words"),
    [
        ("Mars/Olympus_Mons", "unknown time zone 'Mars/Olympus_Mons'"),
        ("america/new_york", "did you mean 'America/New_York'?"),
        ("Europe/Londn", "did you mean 'Europe/London'?"),
        ("", "unknown time zone ''"),
        ("../../etc/passwd", "unknown time zone"),
        ("America", "unknown time zone"),
        ("localtime", "unknown time zone"),  # whatever the host is set to: not reproducible
        ("Factory", "unknown time zone"),
        ("+02:00", "unknown time zone"),
    ],
)
def test_bad_zone(zone: str, words: str) -> None:
    found = only(Cron("0 0 * * *", zone))
    assert found.field == "time_zone"
    assert words in found.description


def test_bad_expression_and_zone_together() -> None:
    found = violations(Cron("0 0 * *", "Nowhere/Special"))
    assert [v.field for v in found] == ["expression", "time_zone"]


@pytest.mark.parametrize("expression", ["*/15 * * * *", "30 * * * *", "* 2 * * *"])
def test_policies_on_a_non_fixed_expression_are_rejected(expression: str) -> None:
    assert not is_fixed_time(expression)
    found = violations(Cron(expression, "UTC", gap=GapPolicy.SKIP, fold=FoldPolicy.BOTH))
    assert [v.field for v in found] == ["gap_policy", "fold_policy"]
    assert "applies only to fixed-time expressions" in found[0].description
    assert only(Cron(expression, "UTC", fold=FoldPolicy.FIRST)).field == "fold_policy"
    assert only(Cron(expression, "UTC", gap=GapPolicy.SHIFT)).field == "gap_policy"


@pytest.mark.parametrize("every", [timedelta(0), timedelta(seconds=-5)])
def test_interval_must_be_positive(every: timedelta) -> None:
    found = only(Interval(every, NOW))
    assert found.field == "every"
    assert "longer than zero" in found.description


def test_interval_anchor_and_one_off_must_be_aware() -> None:
    naive = datetime(2026, 1, 1)
    assert only(Interval(timedelta(minutes=1), naive)).field == "anchor"
    assert only(OneOff(naive)).field == "at"
    assert [v.field for v in violations(Interval(timedelta(0), naive))] == ["every", "anchor"]


def test_prefixing_places_fields_under_the_request_path() -> None:
    with pytest.raises(InvalidArgument) as caught:
        validate(Cron("0 0 * *", "UTC"))
    prefixed = caught.value.prefixed("job.schedule.cron")
    assert prefixed.violations[0].field == "job.schedule.cron.expression"


def test_next_fire_time_refuses_what_validate_refuses() -> None:
    with pytest.raises(InvalidArgument) as caught:
        next_fire_time(Cron("0 0 * *", "UTC"), NOW)
    assert caught.value.violations[0].field == "expression"
    with pytest.raises(InvalidArgument):
        next_fire_time(Cron("0 0 * * *", "Nowhere/Special"), NOW)
    with pytest.raises(InvalidArgument):
        next_fire_time(Interval(timedelta(0), NOW), NOW)
    with pytest.raises(ValueError, match="aware"):
        next_fire_time(OneOff(NOW), datetime(2026, 1, 1))


def test_never_matching_expression_yields_none() -> None:
    assert next_fire_time(Cron("0 0 30 2 *", "UTC"), NOW) is None


def test_is_fixed_time_rejects_invalid_expressions() -> None:
    with pytest.raises(InvalidArgument) as caught:
        is_fixed_time("61 * * * *")
    assert caught.value.violations[0].field == "expression"


def test_jitter_window_must_be_shorter_than_the_shortest_gap() -> None:
    june = datetime(2026, 6, 1, tzinfo=UTC)
    both = Cron("30 1 * * *", "America/New_York", fold=FoldPolicy.BOTH)  # 1 h apart in Nov
    assert jitter_window_violations(both, timedelta(minutes=59), june) == []
    found = jitter_window_violations(both, timedelta(hours=1), june)
    assert [v.field for v in found] == ["jitter_window"]
    assert "shortest gap between occurrences, 3600s" in found[0].description
    assert jitter_window_violations(OneOff(june), timedelta(days=30), june) == []
    assert jitter_window_violations(OneOff(june), timedelta(0), june) == []
    negative = jitter_window_violations(OneOff(june), timedelta(seconds=-1), june)
    assert [v.field for v in negative] == ["jitter_window"]
    interval = Interval(timedelta(seconds=30), june)
    assert jitter_window_violations(interval, timedelta(seconds=29), june) == []
    assert len(jitter_window_violations(interval, timedelta(seconds=30), june)) == 1


def test_unknown_policy_strings_are_rejected_and_known_ones_work_as_strings() -> None:
    bad_gap = Cron("30 2 * * *", "UTC", gap="SHIFTY")  # type: ignore[arg-type]
    assert only(bad_gap).field == "gap_policy"
    bad_fold = Cron("30 2 * * *", "UTC", fold="TWICE")  # type: ignore[arg-type]
    assert only(bad_fold).field == "fold_policy"
    as_text = Cron("30 2 * * *", "America/New_York", gap="SKIP")  # type: ignore[arg-type]
    validate(as_text)
    found = next_fire_time(as_text, datetime(2026, 3, 7, 12, tzinfo=UTC))
    assert found == datetime(2026, 3, 9, 6, 30, tzinfo=UTC)
