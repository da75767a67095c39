"""The CLI's pure pieces: durations as people write them, the paths of bad job-file fields, and
exit codes by gRPC status."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from duetime_cli.describe import parse_span, span
from duetime_cli.failures import EXIT_CODE_MEANINGS, ExitCode, Failure, exit_code_for
from duetime_cli.jobfile import parse_job


@given(st.integers(min_value=1, max_value=400 * 86_400_000))
def test_span_reads_back(ms: int) -> None:
    td = timedelta(milliseconds=ms)
    assert parse_span(span(td)) == td


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("90s", timedelta(seconds=90)),
        ("1h30m", timedelta(minutes=90)),
        ("1.5s", timedelta(seconds=1.5)),
        ("100ms", timedelta(milliseconds=100)),
        ("2d", timedelta(days=2)),
        ("45", timedelta(seconds=45)),
    ],
)
def test_parse_span(text: str, value: timedelta) -> None:
    assert parse_span(text) == value


@pytest.mark.parametrize("text", ["", "5 minutes", "1h30", "m5", "-5s", "5x"])
def test_parse_span_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_span(text)


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
