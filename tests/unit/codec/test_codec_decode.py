"""decode_job_spec: schedules, policies, and reporting every bad field at once."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from google.protobuf.duration_pb2 import Duration

from duetime.jobs.v1 import job_pb2
from duetime_core.errors import InvalidArgument
from duetime_core.jobspec import (
    AfterDelay,
    AtInstant,
    AtLocal,
    Every,
    JobSpec,
    MisfirePolicy,
    MisfireSettings,
    OverlapPolicy,
    Priority,
    RetryPolicy,
)
from duetime_core.schedule.model import Cron, FoldPolicy, GapPolicy
from duetime_infra.codec import decode_job_spec

NOW = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


def base_job() -> job_pb2.Job:
    job = job_pb2.Job(display_name="nightly report")
    job.schedule.cron.expression = "30 2 * * *"
    job.schedule.cron.time_zone = "America/New_York"
    job.target.http.url = "https://example.com/hook"
    return job


def decode(job: job_pb2.Job) -> JobSpec:
    return decode_job_spec(job, now=NOW)


def violations(job: job_pb2.Job, *, path: str = "job") -> dict[str, str]:
    with pytest.raises(InvalidArgument) as info:
        decode_job_spec(job, now=NOW, path=path)
    return {v.field: v.description for v in info.value.violations}


def dur(seconds: int = 0, nanos: int = 0) -> Duration:
    return Duration(seconds=seconds, nanos=nanos)


def test_minimal_job_gets_every_default() -> None:
    spec = decode(base_job())
    assert spec == JobSpec(
        display_name="nightly report",
        schedule=Cron(expression="30 2 * * *", time_zone="America/New_York"),
        target=spec.target,
        attempt_timeout=timedelta(minutes=5),
        retry=RetryPolicy(),
        misfire=MisfireSettings(),
        overlap=OverlapPolicy.ALLOW,
        jitter_window=timedelta(0),
        priority=Priority.NORMAL,
    )


def test_output_only_fields_are_ignored() -> None:
    job = base_job()
    job.name = "teams/a/jobs/b"
    job.job_id = "not-a-uuid"
    job.team = "someone-else"
    job.state = job_pb2.JOB_STATE_ERROR
    job.state_reason = "x"
    job.next_run_time.seconds = -(2**40)  # even invalid values: never read
    job.create_time.nanos = -5
    job.etag = "W/1"
    assert decode(job) == decode(base_job())


def test_empty_job_reports_both_required_parts() -> None:
    assert violations(job_pb2.Job()) == {
        "job.schedule": "required",
        "job.target": "required",
    }


def test_path_prefix() -> None:
    assert set(violations(job_pb2.Job(), path="request.job")) == {
        "request.job.schedule",
        "request.job.target",
    }


def test_schedule_without_kind() -> None:
    job = base_job()
    job.schedule.Clear()
    job.schedule.SetInParent()
    assert "job.schedule" in violations(job)


# --- at ---------------------------------------------------------------------------------


def test_at_run_time() -> None:
    job = base_job()
    job.schedule.at.run_time.FromDatetime(datetime(2026, 5, 1, 9, 0))
    job.schedule.at.run_time.nanos = 123_456_789
    spec = decode(job)
    assert spec.schedule == AtInstant(at=datetime(2026, 5, 1, 9, 0, 0, 123456, tzinfo=UTC))


def test_at_run_time_in_the_past_is_accepted() -> None:
    job = base_job()
    job.schedule.at.run_time.FromDatetime(datetime(2000, 1, 1))
    assert isinstance(decode(job).schedule, AtInstant)


def test_at_local_time() -> None:
    job = base_job()
    job.schedule.at.local_time = "2026-12-24T09:00"
    job.schedule.at.time_zone = "Europe/London"
    spec = decode(job)
    assert spec.schedule == AtLocal(
        local_time=datetime(2026, 12, 24, 9, 0),
        time_zone="Europe/London",
        gap=None,
        fold=None,
        resolved=datetime(2026, 12, 24, 9, 0, tzinfo=UTC),
    )


def test_at_local_time_in_gap_shifts() -> None:
    job = base_job()
    job.schedule.at.local_time = "2026-03-08T02:30:00"
    job.schedule.at.time_zone = "America/New_York"
    job.schedule.at.gap_policy = job_pb2.DST_GAP_POLICY_SHIFT
    spec = decode(job)
    assert isinstance(spec.schedule, AtLocal)
    assert spec.schedule.gap is GapPolicy.SHIFT
    assert spec.schedule.resolved == datetime(2026, 3, 8, 7, 0, tzinfo=UTC)


def test_at_local_time_in_gap_with_skip_would_never_run() -> None:
    job = base_job()
    job.schedule.at.local_time = "2026-03-08T02:30:00"
    job.schedule.at.time_zone = "America/New_York"
    job.schedule.at.gap_policy = job_pb2.DST_GAP_POLICY_SKIP
    assert "never run" in violations(job)["job.schedule.at.gap_policy"]


def test_at_local_time_skip_outside_gap_is_fine() -> None:
    job = base_job()
    job.schedule.at.local_time = "2026-03-09T02:30:00"
    job.schedule.at.time_zone = "America/New_York"
    job.schedule.at.gap_policy = job_pb2.DST_GAP_POLICY_SKIP
    spec = decode(job)
    assert isinstance(spec.schedule, AtLocal)
    assert spec.schedule.gap is GapPolicy.SKIP


def test_at_local_time_fold_last() -> None:
    job = base_job()
    job.schedule.at.local_time = "2026-11-01T01:30"
    job.schedule.at.time_zone = "America/New_York"
    job.schedule.at.fold_policy = job_pb2.DST_FOLD_POLICY_LAST
    spec = decode(job)
    assert isinstance(spec.schedule, AtLocal)
    assert spec.schedule.fold is FoldPolicy.LAST
    assert spec.schedule.resolved == datetime(2026, 11, 1, 6, 30, tzinfo=UTC)


def test_at_local_time_fold_both_is_refused() -> None:
    job = base_job()
    job.schedule.at.local_time = "2026-07-01T01:30"
    job.schedule.at.time_zone = "America/New_York"
    job.schedule.at.fold_policy = job_pb2.DST_FOLD_POLICY_BOTH
    assert set(violations(job)) == {"job.schedule.at.fold_policy"}


def test_at_needs_exactly_one_form() -> None:
    job = base_job()
    job.schedule.at.SetInParent()
    assert "job.schedule.at" in violations(job)
    job.schedule.at.run_time.seconds = 1
    job.schedule.at.local_time = "2026-12-24T09:00"
    job.schedule.at.time_zone = "UTC"
    assert "not both" in violations(job)["job.schedule.at"]


def test_at_local_time_problems_are_all_reported() -> None:
    job = base_job()
    job.schedule.at.local_time = "2026-12-24T09:00Z"
    job.schedule.at.time_zone = "Mars/Olympus"
    job.schedule.at.gap_policy = job_pb2.DstGapPolicy.ValueType(7)
    job.schedule.at.fold_policy = job_pb2.DST_FOLD_POLICY_BOTH
    found = violations(job)
    assert "run_time" in found["job.schedule.at.local_time"]
    assert "unknown time zone" in found["job.schedule.at.time_zone"]
    assert found["job.schedule.at.gap_policy"] == "unknown value 7"
    assert "job.schedule.at.fold_policy" in found


def test_at_local_time_needs_time_zone() -> None:
    job = base_job()
    job.schedule.at.local_time = "2026-12-24T09:00"
    assert violations(job) == {"job.schedule.at.time_zone": "required with local_time"}


def test_at_local_time_unparseable() -> None:
    job = base_job()
    job.schedule.at.local_time = "tomorrow at nine"
    job.schedule.at.time_zone = "UTC"
    assert set(violations(job)) == {"job.schedule.at.local_time"}


def test_at_local_time_out_of_range() -> None:
    job = base_job()
    job.schedule.at.local_time = "0001-01-01T00:00"
    job.schedule.at.time_zone = "Asia/Tokyo"
    assert set(violations(job)) == {"job.schedule.at.local_time"}


def test_at_run_time_with_local_only_fields() -> None:
    job = base_job()
    job.schedule.at.run_time.seconds = 1_800_000_000
    job.schedule.at.time_zone = "UTC"
    job.schedule.at.gap_policy = job_pb2.DST_GAP_POLICY_SKIP
    assert set(violations(job)) == {"job.schedule.at.time_zone", "job.schedule.at.gap_policy"}


def test_at_run_time_invalid() -> None:
    job = base_job()
    job.schedule.at.run_time.seconds = 1
    job.schedule.at.run_time.nanos = -1
    assert set(violations(job)) == {"job.schedule.at.run_time"}


# --- delay ------------------------------------------------------------------------------


def test_delay_resolves_from_now() -> None:
    job = base_job()
    job.schedule.delay.delay.seconds = 90
    job.schedule.delay.run_time.seconds = 5  # output only: ignored
    spec = decode(job)
    assert spec.schedule == AfterDelay(
        delay=timedelta(seconds=90), resolved=NOW + timedelta(seconds=90)
    )


def test_zero_delay_is_allowed() -> None:
    job = base_job()
    job.schedule.delay.delay.SetInParent()
    assert decode(job).schedule == AfterDelay(delay=timedelta(0), resolved=NOW)


@pytest.mark.parametrize(
    "delay", [dur(-1), dur(0, -1), dur(366 * 86400, 1000), dur(10**11), dur(0, 2 * 10**9)]
)
def test_bad_delays(delay: Duration) -> None:
    job = base_job()
    job.schedule.delay.delay.CopyFrom(delay)
    assert set(violations(job)) == {"job.schedule.delay.delay"}


def test_delay_is_required() -> None:
    job = base_job()
    job.schedule.delay.SetInParent()
    assert violations(job) == {"job.schedule.delay.delay": "required"}


# --- interval ---------------------------------------------------------------------------


def test_interval_anchored_on_now_by_default() -> None:
    job = base_job()
    job.schedule.interval.interval.seconds = 60
    assert decode(job).schedule == Every(
        interval=timedelta(seconds=60), start_time=None, anchor=NOW
    )


def test_interval_with_start_time() -> None:
    job = base_job()
    job.schedule.interval.interval.seconds = 3600
    job.schedule.interval.start_time.seconds = 1_700_000_000
    start = datetime.fromtimestamp(1_700_000_000, UTC)
    assert decode(job).schedule == Every(
        interval=timedelta(hours=1), start_time=start, anchor=start
    )


@pytest.mark.parametrize("interval", [dur(0), dur(0, 999_999_999), dur(-60), dur(366 * 86400 + 1)])
def test_bad_intervals(interval: Duration) -> None:
    job = base_job()
    job.schedule.interval.interval.CopyFrom(interval)
    assert set(violations(job)) == {"job.schedule.interval.interval"}


def test_interval_required_and_bad_start_time_both_reported() -> None:
    job = base_job()
    job.schedule.interval.start_time.seconds = 2**50
    assert set(violations(job)) == {
        "job.schedule.interval.interval",
        "job.schedule.interval.start_time",
    }


# --- a schedule's end -------------------------------------------------------------------


def test_a_series_ends_at_end_time_and_after_max_runs() -> None:
    job = base_job()
    job.schedule.end_time.FromDatetime(datetime(2026, 12, 31, 23, 0))
    job.schedule.max_runs = 3
    spec = decode(job)
    assert spec.schedule == Cron(
        "30 2 * * *", "America/New_York", end_time=datetime(2026, 12, 31, 23, 0, tzinfo=UTC)
    )
    assert spec.max_runs == 3
    job.schedule.interval.interval.seconds = 60
    job.schedule.interval.start_time.FromDatetime(datetime(2026, 12, 31, 23, 0))
    assert decode(job).schedule == Every(
        timedelta(minutes=1),
        datetime(2026, 12, 31, 23, 0, tzinfo=UTC),
        datetime(2026, 12, 31, 23, 0, tzinfo=UTC),
        end_time=datetime(2026, 12, 31, 23, 0, tzinfo=UTC),
    )


def test_bad_ends_are_named() -> None:
    job = base_job()
    job.schedule.interval.interval.seconds = 60
    job.schedule.interval.start_time.FromDatetime(datetime(2027, 1, 1))
    job.schedule.end_time.FromDatetime(datetime(2026, 12, 31))
    job.schedule.max_runs = 0
    assert violations(job) == {
        "job.schedule.end_time": "must not be before interval.start_time "
        "(2027-01-01T00:00:00.000000Z), got 2026-12-31T00:00:00.000000Z",
        "job.schedule.max_runs": "must be between 1 and 1000000000, got 0",
    }
    job.schedule.max_runs = -5
    assert "job.schedule.max_runs" in violations(job)
    job.schedule.end_time.seconds = 2**50
    assert "job.schedule.end_time" in violations(job)


def test_a_one_off_has_no_end() -> None:
    job = base_job()
    job.schedule.delay.delay.seconds = 60
    job.schedule.end_time.FromDatetime(datetime(2026, 12, 31))
    job.schedule.max_runs = 1
    one_off = "only for interval and cron schedules: a one-off runs once"
    assert violations(job) == {
        "job.schedule.end_time": one_off,
        "job.schedule.max_runs": one_off,
    }


# --- cron -------------------------------------------------------------------------------


def test_cron_with_policies() -> None:
    job = base_job()
    job.schedule.cron.gap_policy = job_pb2.DST_GAP_POLICY_SKIP
    job.schedule.cron.fold_policy = job_pb2.DST_FOLD_POLICY_BOTH
    assert decode(job).schedule == Cron(
        expression="30 2 * * *",
        time_zone="America/New_York",
        gap=GapPolicy.SKIP,
        fold=FoldPolicy.BOTH,
    )


def test_cron_violations_are_placed_under_the_cron_path() -> None:
    job = base_job()
    job.schedule.cron.expression = "61 2 * * *"
    job.schedule.cron.time_zone = "Nowhere/Special"
    found = violations(job)
    assert "job.schedule.cron.expression" in found
    assert "job.schedule.cron.time_zone" in found


def test_cron_policies_on_elapsed_time_expression() -> None:
    job = base_job()
    job.schedule.cron.expression = "*/15 * * * *"
    job.schedule.cron.gap_policy = job_pb2.DST_GAP_POLICY_SKIP
    assert set(violations(job)) == {"job.schedule.cron.gap_policy"}


def test_cron_unknown_enums() -> None:
    job = base_job()
    job.schedule.cron.gap_policy = job_pb2.DstGapPolicy.ValueType(99)
    job.schedule.cron.fold_policy = job_pb2.DstFoldPolicy.ValueType(-3)
    assert violations(job) == {
        "job.schedule.cron.gap_policy": "unknown value 99",
        "job.schedule.cron.fold_policy": "unknown value -3",
    }


def test_cron_empty() -> None:
    job = base_job()
    job.schedule.cron.Clear()
    job.schedule.cron.SetInParent()
    found = violations(job)
    assert "job.schedule.cron.expression" in found
    assert "job.schedule.cron.time_zone" in found


# --- attempt timeout, retry, misfire, enums ------------------------------------------------


def test_attempt_timeout() -> None:
    job = base_job()
    job.attempt_timeout.seconds = 30
    assert decode(job).attempt_timeout == timedelta(seconds=30)


@pytest.mark.parametrize("timeout", [dur(0), dur(0, 999_999_000), dur(86401), dur(-5)])
def test_bad_attempt_timeout(timeout: Duration) -> None:
    job = base_job()
    job.attempt_timeout.CopyFrom(timeout)
    assert set(violations(job)) == {"job.attempt_timeout"}


def test_retry_policy_values() -> None:
    job = base_job()
    job.retry_policy.max_attempts = 10
    job.retry_policy.initial_backoff.CopyFrom(dur(0, 100_000_000))
    job.retry_policy.max_backoff.seconds = 86400
    job.retry_policy.multiplier = 1.5
    assert decode(job).retry == RetryPolicy(
        max_attempts=10,
        initial_backoff=timedelta(milliseconds=100),
        max_backoff=timedelta(hours=24),
        multiplier=1.5,
    )


def test_retry_policy_zeros_mean_defaults() -> None:
    job = base_job()
    job.retry_policy.initial_backoff.SetInParent()
    job.retry_policy.max_backoff.SetInParent()
    assert decode(job).retry == RetryPolicy()


def test_retry_policy_violations() -> None:
    job = base_job()
    job.retry_policy.max_attempts = -1
    job.retry_policy.initial_backoff.CopyFrom(dur(0, 99_999_999))
    job.retry_policy.max_backoff.seconds = 86401
    job.retry_policy.multiplier = math.inf
    assert set(violations(job)) == {
        "job.retry_policy.max_attempts",
        "job.retry_policy.initial_backoff",
        "job.retry_policy.max_backoff",
        "job.retry_policy.multiplier",
    }


@pytest.mark.parametrize("value", [101, 2**31 - 1, -(2**31)])
def test_max_attempts_range(value: int) -> None:
    job = base_job()
    job.retry_policy.max_attempts = value
    assert set(violations(job)) == {"job.retry_policy.max_attempts"}


@pytest.mark.parametrize("value", [math.nan, -math.inf, 0.5, 10.01, -2.0])
def test_bad_multiplier(value: float) -> None:
    job = base_job()
    job.retry_policy.multiplier = value
    assert set(violations(job)) == {"job.retry_policy.multiplier"}


def test_max_backoff_below_initial() -> None:
    job = base_job()
    job.retry_policy.initial_backoff.seconds = 10
    job.retry_policy.max_backoff.seconds = 5
    assert "at least initial_backoff (10s)" in violations(job)["job.retry_policy.max_backoff"]


def test_default_max_backoff_below_initial_says_so() -> None:
    job = base_job()
    job.retry_policy.initial_backoff.seconds = 3600  # the default max is 5 minutes
    assert "(the default)" in violations(job)["job.retry_policy.max_backoff"]


def test_misfire_values() -> None:
    job = base_job()
    job.misfire.policy = job_pb2.MISFIRE_POLICY_RUN_ALL
    job.misfire.threshold.seconds = 1
    job.misfire.max_catch_up_runs = 1000
    job.misfire.max_catch_up_age.seconds = 7 * 86400
    assert decode(job).misfire == MisfireSettings(
        policy=MisfirePolicy.RUN_ALL,
        threshold=timedelta(seconds=1),
        max_catch_up_runs=1000,
        max_catch_up_age=timedelta(days=7),
    )


def test_misfire_catch_up_fields_accepted_with_any_policy() -> None:
    # Responses fill them in for every job; sending a job back must not fail.
    job = base_job()
    job.misfire.policy = job_pb2.MISFIRE_POLICY_SKIP
    job.misfire.max_catch_up_runs = 5
    assert decode(job).misfire.max_catch_up_runs == 5


def test_misfire_violations() -> None:
    job = base_job()
    job.misfire.policy = job_pb2.MisfirePolicy.ValueType(4)
    job.misfire.threshold.CopyFrom(dur(0, 999_999_999))
    job.misfire.max_catch_up_runs = 1001
    job.misfire.max_catch_up_age.seconds = 59
    assert violations(job) == {
        "job.misfire.policy": "unknown value 4",
        "job.misfire.threshold": "must be between 1s and 24h, got 999999us",
        "job.misfire.max_catch_up_runs": "must be between 1 and 1000, got 1001",
        "job.misfire.max_catch_up_age": "must be between 1m and 7d, got 59s",
    }


def test_overlap_and_priority() -> None:
    job = base_job()
    job.overlap_policy = job_pb2.OVERLAP_POLICY_CANCEL_PREVIOUS
    job.priority = job_pb2.PRIORITY_LOW
    spec = decode(job)
    assert spec.overlap is OverlapPolicy.CANCEL_PREVIOUS
    assert spec.priority is Priority.LOW


def test_unknown_overlap_and_priority() -> None:
    job = base_job()
    job.overlap_policy = job_pb2.OverlapPolicy.ValueType(5)
    job.priority = job_pb2.Priority.ValueType(2**31 - 1)
    assert violations(job) == {
        "job.overlap_policy": "unknown value 5",
        "job.priority": f"unknown value {2**31 - 1}",
    }


@pytest.mark.parametrize("name", ["x" * 201, "line\nbreak", "tab\there", "nul\x00", "del\x7f"])
def test_bad_display_names(name: str) -> None:
    job = base_job()
    job.display_name = name
    assert set(violations(job)) == {"job.display_name"}


def test_display_name_unicode_is_fine() -> None:
    job = base_job()
    job.display_name = "Rapport quotidien — 日報 ✓" + "é" * 170
    assert decode(job).display_name == job.display_name


# --- jitter -----------------------------------------------------------------------------


def test_jitter_window_below_the_gap() -> None:
    job = base_job()
    job.jitter_window.seconds = 3599
    assert decode(job).jitter_window == timedelta(seconds=3599)


@pytest.mark.parametrize("jitter", [dur(-1), dur(0, -1000), dur(3601)])
def test_jitter_window_range(jitter: Duration) -> None:
    job = base_job()
    job.jitter_window.CopyFrom(jitter)
    assert set(violations(job)) == {"job.jitter_window"}


def test_jitter_window_at_least_the_interval() -> None:
    job = base_job()
    job.schedule.interval.interval.seconds = 60
    job.jitter_window.seconds = 60
    assert "shortest gap" in violations(job)["job.jitter_window"]
    job.jitter_window.CopyFrom(dur(59, 999_999_000))
    assert decode(job).jitter_window == timedelta(seconds=60) - timedelta(microseconds=1)


def test_jitter_window_against_cron_gap() -> None:
    job = base_job()
    job.schedule.cron.expression = "*/10 * * * *"
    job.jitter_window.seconds = 600
    assert "(10m)" in violations(job)["job.jitter_window"]


def test_jitter_window_against_a_fold() -> None:
    # Both passes of the repeated hour run at 01:30, one hour apart: the shortest gap.
    job = base_job()
    job.schedule.cron.expression = "30 1 * * *"
    job.schedule.cron.fold_policy = job_pb2.DST_FOLD_POLICY_BOTH
    job.jitter_window.seconds = 3600
    assert "(1h)" in violations(job)["job.jitter_window"]


def test_one_offs_have_no_gap() -> None:
    job = base_job()
    job.schedule.delay.delay.seconds = 5
    job.jitter_window.seconds = 3600
    assert decode(job).jitter_window == timedelta(hours=1)


def test_invalid_schedule_skips_the_gap_check() -> None:
    job = base_job()
    job.schedule.cron.expression = "not cron"
    job.jitter_window.seconds = 60
    assert set(violations(job)) == {"job.schedule.cron.expression"}


def test_everything_wrong_at_once() -> None:
    job = job_pb2.Job(display_name="\x00" * 300)
    job.schedule.interval.interval.seconds = -1
    job.target.http.url = "ftp://example.com"
    job.target.http.method = job_pb2.HttpMethod.ValueType(42)
    job.attempt_timeout.seconds = 0
    job.retry_policy.max_attempts = 0  # default: fine
    job.retry_policy.multiplier = math.nan
    job.misfire.policy = job_pb2.MisfirePolicy.ValueType(9)
    job.overlap_policy = job_pb2.OverlapPolicy.ValueType(9)
    job.priority = job_pb2.Priority.ValueType(9)
    job.jitter_window.seconds = 7200
    assert set(violations(job)) == {
        "job.display_name",
        "job.schedule.interval.interval",
        "job.target.http.method",
        "job.target.http.url",
        "job.attempt_timeout",
        "job.retry_policy.multiplier",
        "job.misfire.policy",
        "job.overlap_policy",
        "job.priority",
        "job.jitter_window",
    }


def test_message_lists_every_violation() -> None:
    job = base_job()
    job.priority = job_pb2.Priority.ValueType(9)
    job.overlap_policy = job_pb2.OverlapPolicy.ValueType(9)
    with pytest.raises(InvalidArgument) as info:
        decode(job)
    assert "job.priority: unknown value 9" in info.value.message
    assert "job.overlap_policy: unknown value 9" in info.value.message
    assert info.value.reason == "INVALID_ARGUMENT"
