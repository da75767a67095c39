"""The CLI's pure pieces: durations as people write them, the paths of bad job-file fields,
exit codes by gRPC status, quota limits as NAME=VALUE, quota failures, held runs' progress
lines, filters put together from options, and a batch item's outcome."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
import typer
from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import Message
from google.rpc import code_pb2, error_details_pb2, status_pb2
from hypothesis import given
from hypothesis import strategies as st

from duetime.admin.v1 import admin_service_pb2
from duetime.jobs.v1 import job_pb2, run_pb2
from duetime_cli.commands import moment_value
from duetime_cli.exits import EXIT_CODE_MEANINGS, ExitCode
from duetime_cli.failures import Failure, exit_code_for
from duetime_cli.filters import Filter, job_filter, run_filter
from duetime_cli.jobfile import parse_job
from duetime_cli.limits import LIMITS, fill, parse_assignments
from duetime_cli.wait import milestones, waiting
from duetime_client.describe import parse_duration, span
from duetime_client.filters import label_restriction
from duetime_client.status import ErrorDetails, QuotaViolation

# Every duration protobuf can hold (+-10,000 years), to the microsecond the CLI prints.
LONGEST = timedelta(seconds=315_576_000_000)
LONGEST_NANOS = 315_576_000_000 * 10**9
DURATION_FIELDS = {
    "attemptTimeout": "attempt_timeout",
    "jitterWindow": "jitter_window",
    "schedule.interval.interval": "schedule.interval.interval",
    "retryPolicy.initialBackoff": "retry_policy.initial_backoff",
    "retryPolicy.maxBackoff": "retry_policy.max_backoff",
    "misfire.threshold": "misfire.threshold",
    "misfire.maxCatchUpAge": "misfire.max_catch_up_age",
}


def nested(path: str, value: Any) -> dict[str, Any]:
    """``{"a": {"b": value}}`` for ``a.b``."""
    head, _, rest = path.partition(".")
    return {head: nested(rest, value) if rest else value}


def field_of(message: Message, path: str) -> Any:
    for name in path.split("."):
        message = getattr(message, name)
    return message


@given(st.timedeltas(min_value=-LONGEST, max_value=LONGEST))
def test_every_duration_the_cli_prints_reads_back(td: timedelta) -> None:
    printed = span(td)
    assert parse_duration(printed).ToTimedelta() == td, printed


@given(
    st.timedeltas(min_value=-LONGEST, max_value=LONGEST),
    st.sampled_from(sorted(DURATION_FIELDS)),
)
def test_a_job_file_takes_durations_as_the_cli_prints_them(td: timedelta, path: str) -> None:
    job = parse_job(nested(path, span(td)), Path("job.yaml"))
    assert field_of(job, DURATION_FIELDS[path]).ToTimedelta() == td


@given(st.integers(min_value=-LONGEST_NANOS, max_value=LONGEST_NANOS))
def test_proto3_json_durations_read_back_to_the_nanosecond(nanos: int) -> None:
    value = Duration()
    value.FromNanoseconds(nanos)
    assert parse_duration(value.ToJsonString()) == value
    job = parse_job({"attemptTimeout": value.ToJsonString()}, Path("job.yaml"))
    assert job.attempt_timeout == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("90s", timedelta(seconds=90)),
        ("5m", timedelta(minutes=5)),
        ("1h30m", timedelta(minutes=90)),
        ("1.5s", timedelta(seconds=1.5)),
        ("0.5s", timedelta(seconds=0.5)),
        ("300s", timedelta(minutes=5)),
        ("100ms", timedelta(milliseconds=100)),
        ("2d", timedelta(days=2)),
        ("45", timedelta(seconds=45)),
        ("-1m30s", timedelta(seconds=-90)),
    ],
)
def test_parse_duration(text: str, value: timedelta) -> None:
    assert parse_duration(text).ToTimedelta() == value


@pytest.mark.parametrize("text", ["", "5 minutes", "1h30", "m5", "--5s", "5x", "-"])
def test_parse_duration_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration like 90s, 5m, 1h30m or 2d"):
        parse_duration(text)


@pytest.mark.parametrize("text", ["3652501d", "315576000001s"])
def test_parse_duration_refuses_more_than_protobuf_holds(text: str) -> None:
    with pytest.raises(ValueError, match="longer than a duration can be"):
        parse_duration(text)


def test_a_bad_duration_in_a_job_file_names_its_field() -> None:
    with pytest.raises(Failure) as caught:
        parse_job({"retryPolicy": {"maxBackoff": "5 minutes"}}, Path("job.yaml"))
    assert caught.value.exit_code is ExitCode.INVALID
    (violation,) = caught.value.violations
    assert violation.field == "job.retry_policy.max_backoff"
    assert violation.description == "'5 minutes' is not a duration like 90s, 5m, 1h30m or 2d"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"scheduel": {}}, "job.scheduel"),
        ({"schedule": {"cron": {"expression": 5}}}, "job.schedule.cron.expression"),
        ({"schedule": {"cron": {"gapPolicy": "NOPE"}}}, "job.schedule.cron.gap_policy"),
        ({"schedule": {"at": {"runTime": "tomorrow"}}}, "job.schedule.at.run_time"),
        ({"schedule": {"interval": "5s"}}, "job.schedule.interval"),
        ({"retry_policy": {"max_attempts": "x"}}, "job.retry_policy.max_attempts"),
        ({"target": {"http": {"headers": {"a": 1}}}}, "job.target.http.headers"),
        ({"target": {"http": {"body": "not base64!"}}}, "job.target.http.body"),
        ({"displayName": ["x"]}, "job.display_name"),
    ],
)
def test_a_bad_field_is_named_as_the_server_names_it(data: dict[str, Any], field: str) -> None:
    with pytest.raises(Failure) as caught:
        parse_job(data, Path("job.yaml"))
    assert caught.value.exit_code is ExitCode.INVALID
    assert [v.field for v in caught.value.violations] == [field]


def test_an_enum_field_lists_its_values() -> None:
    with pytest.raises(Failure) as caught:
        parse_job({"priority": "PRIORITY_URGENT"}, Path("job.yaml"))
    (violation,) = caught.value.violations
    assert violation.description.endswith(
        "; expected one of PRIORITY_HIGH, PRIORITY_NORMAL, PRIORITY_LOW"
    )


def test_every_status_has_an_exit_code_and_families_differ() -> None:
    failures = {exit_code_for(s) for s in grpc.StatusCode if s is not grpc.StatusCode.OK}
    assert ExitCode.OK not in failures
    assert exit_code_for(grpc.StatusCode.ABORTED) is exit_code_for(grpc.StatusCode.ALREADY_EXISTS)
    assert exit_code_for(grpc.StatusCode.NOT_FOUND) is not exit_code_for(grpc.StatusCode.ABORTED)
    assert set(EXIT_CODE_MEANINGS) == set(ExitCode)


def test_quota_assignments_set_and_reset_limits_by_their_contract_names() -> None:
    assert LIMITS == (
        "max_stored_jobs", "runs_per_minute", "rate_burst", "max_running", "max_priority",
        "weight",
    )  # fmt: skip
    values = parse_assignments(
        ["max_stored_jobs=500", "max_priority=high", "weight=default"], allow_default=True
    )
    assert values == {
        "max_stored_jobs": 500,
        "max_priority": job_pb2.PRIORITY_HIGH,
        "weight": None,
    }
    overrides = admin_service_pb2.QuotaOverrides()
    assert fill(overrides, values) == ["max_stored_jobs", "max_priority", "weight"]
    # A limit reset is in the mask but not in the message: the server gives it the default.
    assert [f.name for f, _ in overrides.ListFields()] == ["max_stored_jobs", "max_priority"]
    assert parse_assignments(["max_priority=PRIORITY_LOW"], allow_default=False) == {
        "max_priority": job_pb2.PRIORITY_LOW
    }


@pytest.mark.parametrize(
    ("arguments", "allow_default", "why"),
    [
        (["max_jobs=5"], True, "not a limit; the limits are max_stored_jobs, runs_per_minute"),
        (["weight"], True, "expected NAME=VALUE"),
        (["weight="], True, "expected NAME=VALUE"),
        (["max_running=1.5"], True, "max_running is a whole number"),
        (["max_priority=urgent"], True, "max_priority is one of HIGH, NORMAL, LOW"),
        (["max_running=default"], False, "max_running is a whole number"),
    ],
)
def test_a_bad_quota_assignment_is_named(
    arguments: list[str], allow_default: bool, why: str
) -> None:
    with pytest.raises(typer.BadParameter) as caught:
        parse_assignments(arguments, allow_default=allow_default)
    named = arguments[0].partition("=")[0] if why.startswith("not a") else arguments[0]
    assert caught.value.param_hint == f"'{named}'"
    assert str(caught.value.message).startswith(why)


def test_a_quota_failure_names_the_quota_its_limit_and_usage() -> None:
    violation = error_details_pb2.QuotaFailure.Violation(
        subject="quota:max_stored_jobs",
        description="the team may store 2 active or paused jobs and has 2",
        quota_id="max_stored_jobs",
        quota_dimensions={"limit": "2", "usage": "2"},
        quota_value=2,
    )
    quota = QuotaViolation.decode(violation)
    assert quota == QuotaViolation("max_stored_jobs", "2", "2", violation.description)
    failure = Failure(
        ExitCode.QUOTA, "RESOURCE_EXHAUSTED", violation.description, "STORED_JOBS_QUOTA"
    )
    failure.quotas.append(quota)
    assert failure.human_lines() == [
        "RESOURCE_EXHAUSTED (STORED_JOBS_QUOTA): the team may store 2 active or paused jobs "
        "and has 2",
        "  quota max_stored_jobs: limit 2, usage 2",
    ]
    assert failure.as_dict()["error"]["quotaViolations"] == [
        {
            "quota": "max_stored_jobs",
            "limit": "2",
            "usage": "2",
            "description": violation.description,
        }
    ]


def test_a_run_held_before_its_first_dispatch_is_waiting_not_queued() -> None:
    held = run_pb2.Run(
        state=run_pb2.RUN_STATE_WAITING,
        reason=run_pb2.RUN_REASON_QUOTA,
        reason_detail="held back by the team's limit of runs in flight (max_running)",
        quota_limit=run_pb2.QUOTA_LIMIT_CONCURRENCY,
    )
    assert milestones(held) == []
    assert waiting(held) == "WAITING QUOTA: max_running"
    turn = run_pb2.Run(state=run_pb2.RUN_STATE_WAITING, reason=run_pb2.RUN_REASON_FAIR_SHARE)
    assert waiting(turn) == "WAITING FAIR_SHARE"
    assert waiting(run_pb2.Run(state=run_pb2.RUN_STATE_WAITING)) == "WAITING"  # overlap
    released = run_pb2.Run(
        state=run_pb2.RUN_STATE_QUEUED, quota_limit=run_pb2.QUOTA_LIMIT_CONCURRENCY
    )
    assert milestones(released) == ["QUEUED"]
    assert waiting(released) == ""


@pytest.mark.parametrize(
    ("label", "restriction"),
    [
        ("env=prod", 'labels.env = "prod"'),
        (" env = prod ", 'labels.env = "prod"'),
        ('env=a" OR "b', 'labels.env = "a\\" OR \\"b"'),
        ("team-x", "labels.team-x:*"),
        ("team_x=", 'labels.team_x = ""'),
    ],
)
def test_a_label_becomes_one_restriction(label: str, restriction: str) -> None:
    assert label_restriction(label) == restriction


@pytest.mark.parametrize("label", ["", "=prod", "a b=c", "env.x=1", "labels.env:*"])
def test_a_label_that_would_change_the_filter_is_refused(label: str) -> None:
    with pytest.raises(ValueError, match="key=value, or a key alone"):
        label_restriction(label)


def test_options_are_anded_before_the_typed_filter() -> None:
    assert job_filter("", None) == Filter("")
    # A filter typed alone is sent as typed: the column of an error is the person's.
    assert job_filter("state = PAUSED OR x ", []) == Filter("state = PAUSED OR x")
    assert job_filter("state = PAUSED OR x", ["env=prod", "tier"]) == Filter(
        'labels.env = "prod" AND labels.tier:* AND (state = PAUSED OR x)', composed=True
    )
    with pytest.raises(typer.BadParameter) as bad:
        job_filter("", ["a b"])
    assert bad.value.param_hint == "--label"
    both = run_filter("state = DEAD_LETTERED", "2026-12-06T10:00:00+01:00", "2026-12-07T09:00:00Z")
    assert both == Filter(
        'nominal_time >= "2026-12-06T09:00:00Z" AND nominal_time < "2026-12-07T09:00:00Z" '
        "AND (state = DEAD_LETTERED)",
        composed=True,
    )


def test_since_takes_an_instant_or_a_duration_ago() -> None:
    now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    assert moment_value("90m", "--since", now).ToDatetime(UTC) == now - timedelta(minutes=90)
    assert moment_value("2d", "--since", now).ToDatetime(UTC) == now - timedelta(days=2)
    assert moment_value("2026-12-06T09:00:00Z", "--since", now).ToJsonString() == (
        "2026-12-06T09:00:00Z"
    )
    with pytest.raises(typer.BadParameter) as bad:
        moment_value("2026-12-06 09:00", "--until", now)
    assert bad.value.param_hint == "--until"


def test_a_batch_items_status_reads_as_a_failed_calls() -> None:
    status = status_pb2.Status(code=code_pb2.FAILED_PRECONDITION, message="not paused")
    status.details.add().Pack(error_details_pb2.ErrorInfo(reason="JOB_NOT_PAUSED"))
    failure = Failure.from_details(ErrorDetails.from_status(status))
    assert (failure.exit_code, failure.human_lines()) == (
        ExitCode.PRECONDITION,
        ["FAILED_PRECONDITION (JOB_NOT_PAUSED): not paused"],
    )
    failure.hint = "the filter sent: x"
    assert failure.human_lines()[-1] == "  (the filter sent: x)"
    assert "hint" not in failure.as_dict()["error"]
