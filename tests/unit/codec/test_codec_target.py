"""Targets: URL and header rules, container limits, and [REDACTED] on the way in and out."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from duetime.jobs.v1 import job_pb2
from duetime_core.errors import InvalidArgument
from duetime_core.jobspec import CallSigning, ContainerTarget, HttpMethod, HttpTarget, JobSpec
from duetime_infra.codec import REDACTED, decode_job_spec, encode_job_spec, encode_target_clear
from duetime_infra.codec.spec_json import spec_from_json, spec_to_json

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def http_job(url: str = "https://example.com/hook") -> job_pb2.Job:
    job = job_pb2.Job()
    job.schedule.interval.interval.seconds = 60
    job.target.http.url = url
    return job


def container_job(image: str = "registry.example.com/team/report:1.2") -> job_pb2.Job:
    job = job_pb2.Job()
    job.schedule.interval.interval.seconds = 60
    job.target.container.image = image
    return job


def decode(
    job: job_pb2.Job,
    *,
    existing_headers: dict[str, str] | None = None,
    existing_env: dict[str, str] | None = None,
) -> JobSpec:
    return decode_job_spec(
        job, now=NOW, existing_headers=existing_headers, existing_env=existing_env
    )


def violations(
    job: job_pb2.Job,
    *,
    existing_headers: dict[str, str] | None = None,
    existing_env: dict[str, str] | None = None,
) -> dict[str, str]:
    with pytest.raises(InvalidArgument) as info:
        decode(job, existing_headers=existing_headers, existing_env=existing_env)
    return {v.field: v.description for v in info.value.violations}


def http_of(spec: JobSpec) -> HttpTarget:
    assert isinstance(spec.target, HttpTarget)
    return spec.target


def container_of(spec: JobSpec) -> ContainerTarget:
    assert isinstance(spec.target, ContainerTarget)
    return spec.target


def test_http_target_defaults() -> None:
    spec = decode(http_job())
    assert spec.target == HttpTarget(method=HttpMethod.POST, url="https://example.com/hook")


def test_http_target_in_full() -> None:
    job = http_job("http://10.0.0.1:8080/a/b?c=d#frag")
    job.target.http.method = job_pb2.HTTP_METHOD_PUT
    job.target.http.headers["Authorization"] = "Bearer abc"
    job.target.http.headers["X-Empty"] = ""
    job.target.http.headers["X-Tab"] = "a\tb"
    job.target.http.body = b"\x00\x01" * 100
    assert decode(job).target == HttpTarget(
        method=HttpMethod.PUT,
        url="http://10.0.0.1:8080/a/b?c=d#frag",
        headers={"Authorization": "Bearer abc", "X-Empty": "", "X-Tab": "a\tb"},
        body=b"\x00\x01" * 100,
    )


def test_target_required_kind() -> None:
    job = http_job()
    job.target.Clear()
    job.target.SetInParent()
    assert "job.target" in violations(job)


def test_unknown_method() -> None:
    job = http_job()
    job.target.http.method = job_pb2.HttpMethod.ValueType(6)
    assert violations(job) == {"job.target.http.method": "unknown value 6"}


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("", "required"),
        ("example.com/hook", "absolute http"),
        ("/relative", "absolute http"),
        ("ftp://example.com/x", "absolute http"),
        ("file:///etc/passwd", "absolute http"),
        ("https://", "host"),
        ("https://:443/x", "host"),
        ("https://user:pass@example.com/", "credentials"),
        ("https://token@example.com/", "credentials"),
        ("https://example.com:99999/", "not a valid URL"),
        ("https://example.com:port/", "not a valid URL"),
        ("http://[::1/", "not a valid URL"),
        ("https://example.com/a b", "whitespace"),
        ("https://example.com/\r\nHost: evil", "whitespace"),
        ("https://example.com/\x00", "control"),
        ("https://example.com/" + "a" * 2030, "2048"),
    ],
)
def test_bad_urls(url: str, expected: str) -> None:
    found = violations(http_job(url))
    assert set(found) == {"job.target.http.url"}
    assert expected in found["job.target.http.url"]


@pytest.mark.parametrize(
    "url",
    [
        "HTTPS://Example.COM/x",
        "http://localhost:8080",
        "http://[::1]:8080/x",
        "https://bücher.example/",
        "https://example.com/" + "a" * 2028,
    ],
)
def test_good_urls(url: str) -> None:
    assert isinstance(decode(http_job(url)).target, HttpTarget)


@pytest.mark.parametrize(
    "name",
    [
        "Idempotency-Key",
        "idempotency-key",
        "DUETIME-ATTEMPT",
        "duetime-deadline",
        "Duetime-Deadline-Seconds",
        "traceparent",
        "TraceState",
        "host",
        "Content-Length",
        "transfer-encoding",
    ],
)
def test_reserved_headers(name: str) -> None:
    job = http_job()
    job.target.http.headers[name] = "x"
    assert set(violations(job)) == {f'job.target.http.headers["{name}"]'}


@pytest.mark.parametrize("name", ["", "X Foo", "X:Foo", "Ünïcode", "X-Foo\n", 'a"b', "(x)"])
def test_bad_header_names(name: str) -> None:
    job = http_job()
    job.target.http.headers[name] = "x"
    [field] = violations(job)
    assert field.startswith("job.target.http.headers[")


def test_header_path_escapes_the_name() -> None:
    job = http_job()
    job.target.http.headers['a"b\n'] = "x"
    assert set(violations(job)) == {'job.target.http.headers["a\\"b\\u000a"]'}


@pytest.mark.parametrize("value", ["a\rb", "a\nb", "a\x00b", "\x1b[31m", "a\x7f"])
def test_bad_header_values(value: str) -> None:
    job = http_job()
    job.target.http.headers["X-Foo"] = value
    assert set(violations(job)) == {'job.target.http.headers["X-Foo"]'}


def test_duplicate_header_names_differing_in_case() -> None:
    job = http_job()
    job.target.http.headers["X-Foo"] = "1"
    job.target.http.headers["x-foo"] = "2"
    found = violations(job)
    assert set(found) == {'job.target.http.headers["x-foo"]'}
    assert "case-insensitive" in found['job.target.http.headers["x-foo"]']


def test_header_count_limit() -> None:
    job = http_job()
    for i in range(51):
        job.target.http.headers[f"X-{i}"] = "v"
    assert "at most 50" in violations(job)["job.target.http.headers"]
    del job.target.http.headers["X-0"]
    assert len(http_of(decode(job)).headers) == 50


def test_header_size_limit() -> None:
    job = http_job()
    job.target.http.headers["X-A"] = "v" * (16 * 1024 - 3)
    assert isinstance(decode(job).target, HttpTarget)
    job.target.http.headers["X-A"] = "v" * (16 * 1024 - 2)
    assert "16384 bytes" in violations(job)["job.target.http.headers"]


def test_header_size_counts_utf8_bytes() -> None:
    job = http_job()
    job.target.http.headers["X-A"] = "é" * 8192  # 16 KiB of bytes, 8 Ki characters
    assert "job.target.http.headers" in violations(job)


def test_body_limit() -> None:
    job = http_job()
    job.target.http.body = b"x" * 65536
    assert isinstance(decode(job).target, HttpTarget)
    job.target.http.body = b"x" * 65537
    assert set(violations(job)) == {"job.target.http.body"}


# --- [REDACTED] -------------------------------------------------------------------------


def test_redacted_header_keeps_stored_value() -> None:
    job = http_job()
    job.target.http.headers["Authorization"] = REDACTED
    job.target.http.headers["X-New"] = "new"
    spec = decode(job, existing_headers={"Authorization": "Bearer s3cret", "X-Old": "gone"})
    assert http_of(spec).headers == {"Authorization": "Bearer s3cret", "X-New": "new"}


def test_redacted_header_matches_stored_name_case_insensitively() -> None:
    job = http_job()
    job.target.http.headers["authorization"] = REDACTED
    spec = decode(job, existing_headers={"Authorization": "Bearer s3cret"})
    assert http_of(spec).headers == {"authorization": "Bearer s3cret"}


@pytest.mark.parametrize("existing", [None, {}, {"X-Other": "v"}])
def test_redacted_header_without_stored_value(existing: dict[str, str] | None) -> None:
    job = http_job()
    job.target.http.headers["Authorization"] = REDACTED
    found = violations(job, existing_headers=existing)
    assert "not stored" in found['job.target.http.headers["Authorization"]']


def test_redacted_env_keeps_stored_value() -> None:
    job = container_job()
    job.target.container.env["TOKEN"] = REDACTED
    spec = decode(job, existing_env={"TOKEN": "s3cret"})
    assert container_of(spec).env == {"TOKEN": "s3cret"}
    # Env names are case-sensitive: "token" is another variable.
    job.target.container.env["token"] = REDACTED
    assert 'job.target.container.env["token"]' in violations(job, existing_env={"TOKEN": "s"})


def test_stored_value_counts_toward_the_size_limit() -> None:
    job = http_job()
    job.target.http.headers["X-A"] = REDACTED
    assert "job.target.http.headers" in violations(job, existing_headers={"X-A": "v" * 16 * 1024})


def test_encode_redacts_and_clear_does_not() -> None:
    job = http_job()
    job.target.http.headers["Authorization"] = "Bearer s3cret"
    spec = decode(job)
    out = job_pb2.Job()
    encode_job_spec(spec, out)
    assert dict(out.target.http.headers) == {"Authorization": REDACTED}
    assert "s3cret" not in str(out)
    assert dict(encode_target_clear(spec.target).http.headers) == {"Authorization": "Bearer s3cret"}


def test_encode_redacts_env() -> None:
    job = container_job()
    job.target.container.env["TOKEN"] = "s3cret"
    spec = decode(job)
    out = job_pb2.Job()
    encode_job_spec(spec, out)
    assert dict(out.target.container.env) == {"TOKEN": REDACTED}
    assert dict(encode_target_clear(spec.target).container.env) == {"TOKEN": "s3cret"}


# --- container --------------------------------------------------------------------------


def test_container_target_in_full() -> None:
    job = container_job()
    job.target.container.command.extend(["/bin/report", "--verbose"])
    job.target.container.args.extend(["a", "", "ü"])
    job.target.container.env["_X1"] = "1"
    job.target.container.env["PATH"] = "/bin"
    assert decode(job).target == ContainerTarget(
        image="registry.example.com/team/report:1.2",
        command=("/bin/report", "--verbose"),
        args=("a", "", "ü"),
        env={"_X1": "1", "PATH": "/bin"},
    )


@pytest.mark.parametrize("image", ["", "x" * 513, "image name", "image\n"])
def test_bad_images(image: str) -> None:
    assert set(violations(container_job(image))) == {"job.target.container.image"}


def test_argv_limits() -> None:
    job = container_job()
    job.target.container.command.extend(["x"] * 101)
    job.target.container.args.extend(["ok", "y" * 4097, "nul\x00"])
    assert set(violations(job)) == {
        "job.target.container.command",
        "job.target.container.args[1]",
        "job.target.container.args[2]",
    }


@pytest.mark.parametrize("name", ["", "1ABC", "A-B", "A B", "É", "DUETIME_ATTEMPT", "DUETIME_X"])
def test_bad_env_names(name: str) -> None:
    job = container_job()
    job.target.container.env[name] = "v"
    assert len(violations(job)) == 1


def test_env_limits() -> None:
    job = container_job()
    for i in range(101):
        job.target.container.env[f"V{i}"] = "x"
    job.target.container.env["V0"] = "nul\x00"
    found = violations(job)
    assert "at most 100" in found["job.target.container.env"]
    assert 'job.target.container.env["V0"]' in found


def test_env_size_limit() -> None:
    job = container_job()
    job.target.container.env["A"] = "v" * (64 * 1024 - 1)
    assert isinstance(decode(job).target, ContainerTarget)
    job.target.container.env["A"] = "v" * (64 * 1024)
    assert set(violations(job)) == {"job.target.container.env"}


def test_signing_and_its_audience_round_trip_and_unspecified_means_the_team_default() -> None:
    assert http_of(decode(http_job())).signing is None
    job = http_job()
    job.target.http.signing = job_pb2.CALL_SIGNING_WEBHOOK_AND_ID_TOKEN
    job.target.http.token_audience = "https://target.example/"
    target = http_of(decode(job))
    assert target.signing is CallSigning.WEBHOOK_AND_ID_TOKEN
    assert target.token_audience == "https://target.example/"
    assert spec_from_json(spec_to_json(decode(job))).target == target
    out = encode_target_clear(target)
    assert out.http.signing == job_pb2.CALL_SIGNING_WEBHOOK_AND_ID_TOKEN
    assert out.http.token_audience == "https://target.example/"


def test_a_signed_job_cannot_give_the_headers_its_signatures_use() -> None:
    job = http_job()
    job.target.http.signing = job_pb2.CALL_SIGNING_WEBHOOK_AND_ID_TOKEN
    job.target.http.headers["Webhook-Signature"] = "v1,forged"
    job.target.http.headers["Authorization"] = "Bearer mine"
    assert set(violations(job)) == {
        'job.target.http.headers["Webhook-Signature"]',
        'job.target.http.headers["Authorization"]',
    }
    unsigned = http_job()
    unsigned.target.http.signing = job_pb2.CALL_SIGNING_OFF
    unsigned.target.http.headers["Authorization"] = "Bearer mine"
    assert http_of(decode(unsigned)).signing is CallSigning.OFF
    job.target.http.signing = 99  # type: ignore[assignment]
    assert "job.target.http.signing" in violations(job)
