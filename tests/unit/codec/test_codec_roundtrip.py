"""Round trips: JobSpec -> Job -> JobSpec through the API codec, and JobSpec -> JSON -> JobSpec
through the stored document, for JobSpecs built by hypothesis."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from duetime.jobs.v1 import job_pb2
from duetime_core.jobspec import (
    AfterDelay,
    AtInstant,
    AtLocal,
    CallSigning,
    ContainerTarget,
    Delivery,
    Every,
    HttpMethod,
    HttpTarget,
    JobSpec,
    MisfirePolicy,
    MisfireSettings,
    OverlapPolicy,
    Priority,
    RetryPolicy,
    ScheduleSpec,
    SecretValue,
    Target,
)
from duetime_core.schedule.dst import resolve_local
from duetime_core.schedule.model import Cron, FoldPolicy, GapPolicy
from duetime_infra.codec import (
    REDACTED,
    SPEC_JSON_VERSION,
    decode_job_spec,
    encode_job_spec,
    spec_from_json,
    spec_to_json,
)
from duetime_infra.secrets.keyring import new_keyring
from duetime_infra.secrets.sealing import SecretBox

NOW = datetime(2026, 3, 1, 12, 0, 0, 654321, tzinfo=UTC)
BOX = SecretBox(new_keyring("unit-1"))
JOB_ID = uuid.UUID(int=7)
ZONES = ["UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kolkata"]
# (expression, fixed-time): DST policies are only allowed on fixed-time expressions.
CRONS = [
    ("30 2 * * *", True),
    ("0 9 * * MON-FRI", True),
    ("0 0 L * *", True),
    ("15 10 ? * 5L", True),
    ("0 30 1 * * *", True),
    ("*/15 * * * *", False),
    ("30 * * * *", False),
    ("* * * * * *", False),
]

ONE_US = timedelta(microseconds=1)
# The instants a schedule may name (duetime_core.jobspec.instant_problem).
schedulable = st.datetimes(min_value=datetime(1, 1, 4), max_value=datetime(9999, 12, 28)).map(
    lambda d: d.replace(tzinfo=UTC)
)
no_controls = st.characters(exclude_categories=["Cc", "Cs"])
printable_ascii = st.characters(min_codepoint=0x20, max_codepoint=0x7E)


@st.composite
def at_locals(draw: st.DrawFn) -> AtLocal:
    local = draw(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)))
    zone = draw(st.sampled_from(ZONES))
    gap = draw(st.sampled_from([None, GapPolicy.SHIFT, GapPolicy.SKIP]))
    fold = draw(st.sampled_from([None, FoldPolicy.FIRST, FoldPolicy.LAST]))
    resolved = resolve_local(local, zone, gap, fold)
    assume(resolved is not None)
    assert resolved is not None
    return AtLocal(local_time=local, time_zone=zone, gap=gap, fold=fold, resolved=resolved)


@st.composite
def everys(draw: st.DrawFn) -> Every:
    interval = draw(st.timedeltas(min_value=timedelta(seconds=1), max_value=timedelta(days=366)))
    start = draw(st.none() | schedulable)
    end = draw(st.none() | schedulable)
    if start is not None and end is not None and end < start:
        end = None
    return Every(
        interval=interval, start_time=start, anchor=NOW if start is None else start, end_time=end
    )


@st.composite
def crons(draw: st.DrawFn) -> Cron:
    expression, fixed = draw(st.sampled_from(CRONS))
    zone = draw(st.sampled_from(ZONES))
    end = draw(st.none() | schedulable)
    if not fixed:
        return Cron(expression=expression, time_zone=zone, end_time=end)
    return Cron(
        expression=expression,
        time_zone=zone,
        gap=draw(st.sampled_from([None, *GapPolicy])),
        fold=draw(st.sampled_from([None, *FoldPolicy])),
        end_time=end,
    )


delays = st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=366)).map(
    lambda d: AfterDelay(delay=d, resolved=NOW + d)
)
schedules: st.SearchStrategy[ScheduleSpec] = st.one_of(
    schedulable.map(lambda at: AtInstant(at=at)), at_locals(), delays, everys(), crons()
)


def case_unique(names: dict[str, str]) -> bool:
    return len({name.lower() for name in names}) == len(names)


header_names = st.from_regex(r"X-[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}", fullmatch=True)
header_values = st.text(printable_ascii | st.sampled_from("\té日"), max_size=64)
env_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True).filter(
    lambda n: not n.startswith("DUETIME_")
)
no_nul = st.characters(exclude_characters="\x00", exclude_categories=["Cs"])


def _signed_headers_free(target: HttpTarget) -> bool:
    """A job that signs does not give the headers its signatures use (refused)."""
    taken = {"authorization", "webhook-id", "webhook-timestamp", "webhook-signature"}
    return target.signing is None or not any(name.lower() in taken for name in target.headers)


def targets(*, secrets: bool) -> st.SearchStrategy[Target]:
    headers = (
        st.dictionaries(header_names, header_values, max_size=8).filter(case_unique)
        if secrets
        else st.just({})
    )
    env = (
        st.dictionaries(env_names, st.text(no_nul, max_size=64), max_size=8)
        if secrets
        else st.just({})
    )
    urls = st.builds(
        lambda scheme, host, path: f"{scheme}://{host}/{path}",
        st.sampled_from(["http", "https"]),
        st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z]{2,8}){0,3}(:[0-9]{1,4})?", fullmatch=True),
        st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=40),
    )
    http = st.builds(
        HttpTarget,
        method=st.sampled_from(HttpMethod),
        url=urls,
        headers=headers,
        body=st.binary(max_size=512),
        signing=st.sampled_from([None, *CallSigning]),
        token_audience=st.sampled_from(["", "https://target.example/"]),
    ).filter(_signed_headers_free)
    argv = st.lists(st.text(no_nul, max_size=32), max_size=5).map(tuple)
    container = st.builds(
        ContainerTarget,
        image=st.from_regex(r"[a-z0-9./:@_-]{1,60}", fullmatch=True),
        command=argv,
        args=argv,
        env=env,
    )
    return st.one_of(http, container)


@st.composite
def retries(draw: st.DrawFn) -> RetryPolicy:
    initial = draw(
        st.timedeltas(min_value=timedelta(milliseconds=100), max_value=timedelta(hours=1))
    )
    return RetryPolicy(
        max_attempts=draw(st.integers(1, 100)),
        initial_backoff=initial,
        max_backoff=draw(st.timedeltas(min_value=initial, max_value=timedelta(hours=24))),
        multiplier=draw(st.floats(1.0, 10.0)),
    )


misfires = st.builds(
    MisfireSettings,
    policy=st.sampled_from(MisfirePolicy),
    threshold=st.timedeltas(min_value=timedelta(seconds=1), max_value=timedelta(hours=24)),
    max_catch_up_runs=st.integers(1, 1000),
    max_catch_up_age=st.timedeltas(min_value=timedelta(minutes=1), max_value=timedelta(days=7)),
)


def jitter_limit(schedule: ScheduleSpec) -> timedelta:
    """A jitter window below this is valid for the schedule."""
    match schedule:
        case Every(interval=interval):
            return min(timedelta(hours=1), interval - ONE_US)
        case Cron():
            return timedelta(seconds=1) - ONE_US  # cron gaps are whole seconds, at least one
        case _:
            return timedelta(hours=1)  # one-offs have no gap


@st.composite
def job_specs(draw: st.DrawFn, *, secrets: bool = True) -> JobSpec:
    schedule = draw(schedules)
    is_series = isinstance(schedule, Every | Cron)
    return JobSpec(
        display_name=draw(st.text(no_controls, max_size=200)),
        schedule=schedule,
        target=draw(targets(secrets=secrets)),
        attempt_timeout=draw(
            st.timedeltas(min_value=timedelta(seconds=1), max_value=timedelta(hours=24))
        ),
        retry=draw(retries()),
        misfire=draw(misfires),
        overlap=draw(st.sampled_from(OverlapPolicy)),
        jitter_window=draw(st.timedeltas(min_value=timedelta(0), max_value=jitter_limit(schedule))),
        priority=draw(st.sampled_from(Priority)),
        delivery=draw(st.sampled_from(Delivery)),
        max_runs=draw(st.none() | st.integers(1, 1_000_000_000)) if is_series else None,
        excluded_calendars=tuple(
            draw(
                st.lists(
                    st.from_regex(r"[a-z][a-z0-9-]{1,20}", fullmatch=True), unique=True, max_size=3
                )
            )
        ),
    )


def encode(spec: JobSpec) -> job_pb2.Job:
    out = job_pb2.Job()
    encode_job_spec(spec, out)
    return out


def secrets_of(spec: JobSpec) -> tuple[dict[str, SecretValue], dict[str, SecretValue]]:
    match spec.target:
        case HttpTarget(headers=headers):
            return headers, {}
        case ContainerTarget(env=env):
            return {}, env


@settings(deadline=None)
@given(job_specs(secrets=False))
def test_api_round_trip_without_secrets(spec: JobSpec) -> None:
    assert decode_job_spec(encode(spec), now=NOW) == spec


@settings(deadline=None)
@given(job_specs())
def test_api_round_trip_with_stored_secrets(spec: JobSpec) -> None:
    headers, env = secrets_of(spec)
    job = encode(spec)
    assert set(job.target.http.headers.values()) <= {REDACTED}
    assert set(job.target.container.env.values()) <= {REDACTED}
    decoded = decode_job_spec(job, now=NOW, existing_headers=headers, existing_env=env)
    assert decoded == spec
    assert encode(decoded) == job


@settings(deadline=None)
@given(job_specs())
def test_wire_round_trip(spec: JobSpec) -> None:
    # Through the bytes a client would see and send back.
    headers, env = secrets_of(spec)
    job = job_pb2.Job.FromString(encode(spec).SerializeToString())
    assert decode_job_spec(job, now=NOW, existing_headers=headers, existing_env=env) == spec


@settings(deadline=None)
@given(job_specs())
def test_json_round_trip(spec: JobSpec) -> None:
    sealed = BOX.seal_spec(JOB_ID, spec)
    doc = spec_to_json(sealed)
    assert doc["v"] == SPEC_JSON_VERSION
    # What jsonb stores is text: go through it.
    assert spec_from_json(json.loads(json.dumps(doc))) == sealed
    assert spec_from_json(doc) == sealed
    assert BOX.open_target(JOB_ID, sealed.target) == spec.target


def test_encode_fills_effective_defaults() -> None:
    spec = JobSpec(
        display_name="",
        schedule=Cron(expression="*/5 * * * *", time_zone="UTC"),
        target=HttpTarget(method=HttpMethod.POST, url="https://example.com"),
    )
    job = encode(spec)
    assert job.attempt_timeout.seconds == 300
    assert job.retry_policy.max_attempts == 3
    assert job.retry_policy.initial_backoff.seconds == 1
    assert job.retry_policy.max_backoff.seconds == 300
    assert job.retry_policy.multiplier == 2.0
    assert job.misfire.policy == job_pb2.MISFIRE_POLICY_RUN_ONCE
    assert job.misfire.threshold.seconds == 60
    assert job.misfire.max_catch_up_runs == 100
    assert job.misfire.max_catch_up_age.seconds == 86400
    assert job.overlap_policy == job_pb2.OVERLAP_POLICY_ALLOW
    assert job.priority == job_pb2.PRIORITY_NORMAL
    assert job.target.http.method == job_pb2.HTTP_METHOD_POST
    assert job.HasField("jitter_window")
    # Unset DST policies stay unset: for "*/5" the default is not SHIFT/FIRST but elapsed time.
    assert job.schedule.cron.gap_policy == job_pb2.DST_GAP_POLICY_UNSPECIFIED


def test_encode_schedule_forms() -> None:
    local = AtLocal(
        local_time=datetime(2026, 3, 8, 2, 30, 0, 5),
        time_zone="America/New_York",
        gap=GapPolicy.SHIFT,
        fold=None,
        resolved=datetime(2026, 3, 8, 7, 0, tzinfo=UTC),
    )
    base = JobSpec(
        display_name="",
        schedule=local,
        target=HttpTarget(method=HttpMethod.GET, url="https://example.com"),
    )
    at = encode(base).schedule.at
    assert at.local_time == "2026-03-08T02:30:00.000005"
    assert at.time_zone == "America/New_York"
    assert at.gap_policy == job_pb2.DST_GAP_POLICY_SHIFT
    assert not at.HasField("run_time")

    delay = AfterDelay(delay=timedelta(minutes=5), resolved=NOW + timedelta(minutes=5))
    out = encode(JobSpec(display_name="", schedule=delay, target=base.target)).schedule.delay
    assert out.delay.seconds == 300
    assert out.run_time.ToDatetime(tzinfo=UTC) == NOW + timedelta(minutes=5)

    every = Every(interval=timedelta(seconds=30), start_time=None, anchor=NOW)
    interval = encode(JobSpec(display_name="", schedule=every, target=base.target)).schedule
    assert interval.interval.interval.seconds == 30
    assert not interval.interval.HasField("start_time")


def test_encode_replaces_previous_contents() -> None:
    job = job_pb2.Job(name="teams/t/jobs/j", etag="e1")
    job.target.http.headers["Old"] = "x"
    job.schedule.cron.expression = "* * * * *"
    spec = JobSpec(
        display_name="n",
        schedule=AtInstant(at=NOW),
        target=ContainerTarget(image="img"),
    )
    encode_job_spec(spec, job)
    assert job.name == "teams/t/jobs/j"  # output-only fields are the caller's
    assert job.etag == "e1"
    assert job.target.WhichOneof("kind") == "container"
    assert job.schedule.WhichOneof("kind") == "at"


def test_json_document_shape() -> None:
    spec = JobSpec(
        display_name="report",
        schedule=Every(
            interval=timedelta(minutes=1, microseconds=5),
            start_time=None,
            anchor=datetime(2026, 1, 1, tzinfo=UTC),
        ),
        target=HttpTarget(
            method=HttpMethod.PATCH,
            url="https://example.com",
            headers={"Authorization": "Bearer s3cret"},
            body=b"\xff\x00",
        ),
    )
    doc = spec_to_json(BOX.seal_spec(JOB_ID, spec))
    assert doc["schedule"] == {
        "kind": "every",
        "interval_us": 60_000_005,
        "start_time": None,
        "anchor": "2026-01-01T00:00:00.000000Z",
    }
    sealed = doc["target"]["headers"]["Authorization"]
    assert doc["target"] == {
        "kind": "http",
        "method": "PATCH",
        "url": "https://example.com",
        "headers": {"Authorization": {"key_id": "unit-1", "sealed_base64": mock.ANY}},
        "body_base64": "/wA=",
    }
    # AES-GCM: nonce, the value's 13 bytes, tag; and nothing of the value in clear.
    assert len(base64.b64decode(sealed["sealed_base64"])) == 12 + 13 + 16
    assert "s3cret" not in json.dumps(doc)
    assert doc["attempt_timeout_us"] == 300_000_000
    assert doc["misfire"]["policy"] == "RUN_ONCE"
    assert doc["overlap"] == "ALLOW"
    assert doc["priority"] == "NORMAL"
    assert doc["delivery"] == "AT_LEAST_ONCE"


def test_json_refuses_clear_secrets_and_reads_those_older_builds_wrote() -> None:
    spec = JobSpec(
        display_name="",
        schedule=AtInstant(at=NOW),
        target=ContainerTarget(image="i", env={"TOKEN": "s3cret"}),
    )
    with pytest.raises(ValueError, match="sealed"):
        spec_to_json(spec)
    doc = spec_to_json(BOX.seal_spec(JOB_ID, spec))
    # A document of an older build: values in clear, no delivery.
    del doc["delivery"]
    doc["target"]["env"] = {"TOKEN": "s3cret"}
    assert spec_from_json(doc) == spec
    with pytest.raises(ValueError, match="malformed"):
        spec_from_json({**doc, "target": {**doc["target"], "env": {"TOKEN": 7}}})


def test_json_rejects_other_versions_and_garbage() -> None:
    doc = spec_to_json(
        JobSpec(display_name="", schedule=AtInstant(at=NOW), target=ContainerTarget(image="i"))
    )
    with pytest.raises(ValueError, match="version"):
        spec_from_json({**doc, "v": 2})
    with pytest.raises(ValueError, match="malformed"):
        spec_from_json({**doc, "schedule": {"kind": "sometimes"}})
    with pytest.raises(ValueError, match="malformed"):
        spec_from_json({**doc, "attempt_timeout_us": "300"})
    with pytest.raises(ValueError, match="malformed"):
        spec_from_json({**doc, "attempt_timeout_us": True})
    with pytest.raises(ValueError, match="malformed"):
        spec_from_json({k: val for k, val in doc.items() if k != "retry"})
    with pytest.raises(ValueError, match="malformed"):
        spec_from_json({**doc, "overlap": "SOMETIMES"})


def test_json_accepts_a_whole_multiplier() -> None:
    doc = spec_to_json(
        JobSpec(display_name="", schedule=AtInstant(at=NOW), target=ContainerTarget(image="i"))
    )
    doc["retry"]["multiplier"] = 2
    spec = spec_from_json(doc)
    assert spec.retry.multiplier == 2.0
    assert isinstance(spec.retry.multiplier, float)
