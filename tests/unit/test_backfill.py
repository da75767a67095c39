"""Backfill's rules from plain values: the range refused naming its field, the cap with the
count, SKIP_RAN's plan, and the run key a backfill makes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from duetime_core.backfill import (
    MAX_BACKFILL_RUNS,
    BackfillOverlap,
    BackfillRange,
    check_range,
    occurrences_in,
    plan_backfill,
)
from duetime_core.errors import InvalidArgument
from duetime_core.jobspec import AtInstant, Every
from duetime_core.runkey import RunKey
from duetime_core.schedule import Cron

NOW = datetime(2026, 12, 6, 12, tzinfo=UTC)
START = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("start", "end", "field", "words"),
    [
        (None, START, "start_time", "required"),
        (START, None, "end_time", "required"),
        (START, START, "end_time", "after start_time"),
        (START, NOW + timedelta(seconds=1), "end_time", "must not be in the future"),
        (START - timedelta(days=3661), START, "end_time", "at most 3660 days"),
    ],
)
def test_a_bad_range_is_refused_naming_its_field(
    start: datetime | None, end: datetime | None, field: str, words: str
) -> None:
    with pytest.raises(InvalidArgument) as refused:
        check_range(start, end, NOW)
    (violation,) = refused.value.violations
    assert violation.field == field
    assert words in violation.description


def test_a_range_past_the_cap_is_refused_with_its_count() -> None:
    every_minute = Cron("* * * * *", "UTC")
    fits = BackfillRange(START, START + timedelta(minutes=MAX_BACKFILL_RUNS))
    assert len(occurrences_in(every_minute, fits)) == MAX_BACKFILL_RUNS
    with pytest.raises(InvalidArgument) as refused:
        occurrences_in(every_minute, BackfillRange(START, fits.end + timedelta(minutes=1)))
    assert "10001 occurrences" in refused.value.violations[0].description
    with pytest.raises(InvalidArgument) as far:
        occurrences_in(every_minute, BackfillRange(START, START + timedelta(days=30)))
    assert "more than 20000 occurrences" in far.value.violations[0].description


def test_an_interval_starts_at_its_anchor_and_ignores_its_end() -> None:
    anchor = START + timedelta(hours=1)
    ended = Every(timedelta(hours=6), anchor, anchor, end_time=anchor)
    found = occurrences_in(ended, BackfillRange(START, START + timedelta(days=1)))
    assert found == tuple(anchor + timedelta(hours=6 * k) for k in range(4))
    one_off = AtInstant(START + timedelta(minutes=5))
    assert occurrences_in(one_off, BackfillRange(START, NOW)) == (one_off.at,)


def test_skip_ran_leaves_out_what_ran_and_the_others_run_everything() -> None:
    times = tuple(START + timedelta(hours=k) for k in range(5))
    ran = {times[1], times[3], START - timedelta(hours=1)}
    skipping = plan_backfill(times, BackfillOverlap.SKIP_RAN, ran)
    assert skipping.runs == (times[0], times[2], times[4])
    assert skipping.skipped == 2
    for overlap in (BackfillOverlap.ALL, BackfillOverlap.ONE_AT_A_TIME):
        assert plan_backfill(times, overlap, ran).runs == times


def test_a_backfilled_run_has_a_key_of_its_own() -> None:
    job_id = uuid.UUID(int=7)
    key = RunKey.backfilled(job_id, START, "fill-1")
    assert key != RunKey.scheduled(job_id, START)
    assert key.backfill_request_id == "fill-1"
    assert key.trigger_request_id is None
    assert key.canonical() == f"{job_id}/backfill/fill-1/2026-11-01T00:00:00Z"
