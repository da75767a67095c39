"""The ``Target`` of a job: HTTP call or container task, with its secrets.

Header and env values may be credentials. They are stored sealed and sent, but the API answers
with ``[REDACTED]`` in their place, and an update that sends ``[REDACTED]`` back keeps the stored
(sealed) value; a client that read a job can therefore send it back unchanged without knowing
them, and the API never needs to open one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from duetime.jobs.v1 import job_pb2
from duetime_core.jobspec import (
    CallSigning,
    ContainerTarget,
    HttpMethod,
    HttpTarget,
    Sealed,
    SecretValue,
    Target,
    secret_size,
)
from duetime_infra.codec.violations import Violations, quote_key, read_enum

REDACTED = "[REDACTED]"

MAX_URL_CHARS = 2048
MAX_HEADERS = 50
MAX_HEADER_BYTES = 16 * 1024
MAX_BODY_BYTES = 64 * 1024
MAX_IMAGE_CHARS = 512
MAX_ARGV_ITEMS = 100
MAX_ARGV_ITEM_BYTES = 4 * 1024
MAX_ENV = 100
MAX_ENV_BYTES = 64 * 1024

# Set by Duetime on every call (or by the HTTP client from the request itself); a user value
# would break idempotency, tracing or the request's framing. Transfer-Encoding is refused for
# the same reason as Content-Length: a body framed twice is a request-smuggling hazard.
RESERVED_HEADERS = frozenset(
    name.lower()
    for name in (
        "Idempotency-Key",
        "Duetime-Attempt",
        "Duetime-Deadline",
        "Duetime-Deadline-Seconds",
        "traceparent",
        "tracestate",
        "Host",
        "Content-Length",
        "Transfer-Encoding",
    )
)
RESERVED_ENV_PREFIX = "DUETIME_"
# Set by Duetime on a signed call: refused in the headers of a job that signs.
WEBHOOK_HEADERS = frozenset(("webhook-id", "webhook-timestamp", "webhook-signature"))
ID_TOKEN_HEADER = "authorization"

_HTTP_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 7230 section 3.2.6
# CR, LF and NUL split or end a header; other C0 controls and DEL are refused by HTTP clients
# (h11, for one) at send time, which would fail every attempt. Tab is legal inside a value.
_BAD_HEADER_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_METHODS: dict[int, HttpMethod] = {
    job_pb2.HTTP_METHOD_GET: HttpMethod.GET,
    job_pb2.HTTP_METHOD_POST: HttpMethod.POST,
    job_pb2.HTTP_METHOD_PUT: HttpMethod.PUT,
    job_pb2.HTTP_METHOD_PATCH: HttpMethod.PATCH,
    job_pb2.HTTP_METHOD_DELETE: HttpMethod.DELETE,
}
_SIGNINGS: dict[int, CallSigning] = {
    job_pb2.CALL_SIGNING_OFF: CallSigning.OFF,
    job_pb2.CALL_SIGNING_WEBHOOK: CallSigning.WEBHOOK,
    job_pb2.CALL_SIGNING_ID_TOKEN: CallSigning.ID_TOKEN,
    job_pb2.CALL_SIGNING_WEBHOOK_AND_ID_TOKEN: CallSigning.WEBHOOK_AND_ID_TOKEN,
}
SIGNING_NUMBERS: dict[CallSigning, job_pb2.CallSigning.ValueType] = {
    CallSigning.OFF: job_pb2.CALL_SIGNING_OFF,
    CallSigning.WEBHOOK: job_pb2.CALL_SIGNING_WEBHOOK,
    CallSigning.ID_TOKEN: job_pb2.CALL_SIGNING_ID_TOKEN,
    CallSigning.WEBHOOK_AND_ID_TOKEN: job_pb2.CALL_SIGNING_WEBHOOK_AND_ID_TOKEN,
}


def read_signing(v: Violations, field: str, raw: int) -> CallSigning | None:
    """A ``CallSigning`` number as the domain's (None: unspecified)."""
    return read_enum(v, field, raw, _SIGNINGS, None)


def signing_of(raw: int) -> CallSigning | None:
    """A ``CallSigning`` number the scheduler sent, as the domain's (None: unspecified, or a
    number this build does not know: the team's default)."""
    return _SIGNINGS.get(raw)


def method_of(raw: int) -> HttpMethod:
    """An ``HttpMethod`` number the scheduler sent, as the domain's (POST: unspecified, or a
    number this build does not know)."""
    return _METHODS.get(raw, HttpMethod.POST)


_METHOD_NUMBERS: dict[HttpMethod, job_pb2.HttpMethod.ValueType] = {
    HttpMethod.GET: job_pb2.HTTP_METHOD_GET,
    HttpMethod.POST: job_pb2.HTTP_METHOD_POST,
    HttpMethod.PUT: job_pb2.HTTP_METHOD_PUT,
    HttpMethod.PATCH: job_pb2.HTTP_METHOD_PATCH,
    HttpMethod.DELETE: job_pb2.HTTP_METHOD_DELETE,
}


def read_target(
    msg: job_pb2.Target,
    v: Violations,
    *,
    path: str,
    existing_headers: Mapping[str, SecretValue] | None,
    existing_env: Mapping[str, SecretValue] | None,
) -> Target | None:
    """The domain target, or None when it is missing or has no kind (recorded in ``v``)."""
    kind = msg.WhichOneof("kind")
    if kind == "http":
        return _read_http(msg.http, v, f"{path}.http", existing_headers or {})
    if kind == "container":
        return _read_container(msg.container, v, f"{path}.container", existing_env or {})
    v.add(path, "required: set one of http or container")
    return None


def _read_http(
    msg: job_pb2.HttpTarget, v: Violations, path: str, existing: Mapping[str, SecretValue]
) -> HttpTarget:
    method = read_enum(v, f"{path}.method", msg.method, _METHODS, HttpMethod.POST)
    _check_url(v, f"{path}.url", msg.url)
    headers = _read_headers(v, f"{path}.headers", msg.headers, existing)
    if len(msg.body) > MAX_BODY_BYTES:
        v.add(f"{path}.body", f"at most {MAX_BODY_BYTES} bytes, got {len(msg.body)}")
    signing = read_signing(v, f"{path}.signing", msg.signing)
    _check_signed_headers(v, f"{path}.headers", headers, signing)
    if len(msg.token_audience) > MAX_URL_CHARS:
        v.add(f"{path}.token_audience", f"at most {MAX_URL_CHARS} characters")
    return HttpTarget(
        method=method,
        url=msg.url,
        headers=headers,
        body=msg.body,
        signing=signing,
        token_audience=msg.token_audience,
    )


def _check_signed_headers(
    v: Violations, field: str, headers: Mapping[str, SecretValue], signing: CallSigning | None
) -> None:
    """A job that signs its calls cannot give the headers its signatures use."""
    if signing is None:
        return
    taken = (WEBHOOK_HEADERS if signing.webhook else frozenset()) | (
        {ID_TOKEN_HEADER} if signing.id_token else frozenset()
    )
    for name in headers:
        if name.lower() in taken:
            v.add(f"{field}[{quote_key(name)}]", f"{name} is set by Duetime on a signed call")


def _check_url(v: Violations, field: str, url: str) -> None:
    if not url:
        v.add(field, "required")
        return
    if len(url) > MAX_URL_CHARS:
        v.add(field, f"at most {MAX_URL_CHARS} characters, got {len(url)}")
        return
    if any(c.isspace() or not c.isprintable() for c in url):
        v.add(field, "must not contain whitespace or control characters (percent-encode them)")
        return
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - parsing the port is the check: it raises when malformed
    except ValueError as exc:
        v.add(field, f"not a valid URL: {exc}")
        return
    if parts.scheme not in ("http", "https"):
        v.add(field, "must be an absolute http:// or https:// URL")
        return
    if not host:
        v.add(field, "must name a host")
    if parts.username is not None or parts.password is not None:
        # Credentials in a URL end up in logs and traces; headers are redacted.
        v.add(field, "must not carry credentials (user:password@); send them in a header")


def _read_headers(
    v: Violations, field: str, headers: Mapping[str, str], existing: Mapping[str, SecretValue]
) -> dict[str, SecretValue]:
    if len(headers) > MAX_HEADERS:
        v.add(field, f"at most {MAX_HEADERS} headers, got {len(headers)}")
    stored_folded = {name.lower(): value for name, value in existing.items()}
    seen: dict[str, str] = {}  # lower-cased name -> name as sent
    out: dict[str, SecretValue] = {}
    total = 0
    for name in sorted(headers):  # map order is arbitrary; violations come out stable
        raw = headers[name]
        value: SecretValue = raw
        at = f"{field}[{quote_key(name)}]"
        folded = name.lower()
        if not _HTTP_TOKEN.fullmatch(name):
            v.add(
                at,
                "name must be a non-empty HTTP token (RFC 7230): letters, digits, !#$%&'*+-.^_`|~",
            )
        elif folded in RESERVED_HEADERS:
            v.add(at, f"{name} is set by Duetime and cannot be given")
        elif folded in seen:
            v.add(at, f"duplicate of {seen[folded]!r}: header names are case-insensitive")
        seen[folded] = name
        if raw == REDACTED:
            stored = existing.get(name, stored_folded.get(folded))
            if stored is None:
                v.add(at, "redacted value for a header that is not stored; send the value itself")
            else:
                value = stored
        elif _BAD_HEADER_VALUE.search(raw):
            v.add(at, "value must not contain CR, LF, NUL or other control characters")
        total += len(name.encode()) + secret_size(value)
        out[name] = value
    if total > MAX_HEADER_BYTES:
        v.add(field, f"at most {MAX_HEADER_BYTES} bytes of names and values in all, got {total}")
    return out


def _read_container(
    msg: job_pb2.ContainerTarget, v: Violations, path: str, existing: Mapping[str, SecretValue]
) -> ContainerTarget:
    image = msg.image
    if not image:
        v.add(f"{path}.image", "required")
    elif len(image) > MAX_IMAGE_CHARS:
        v.add(f"{path}.image", f"at most {MAX_IMAGE_CHARS} characters, got {len(image)}")
    elif any(c.isspace() or not c.isprintable() for c in image):
        v.add(f"{path}.image", "must not contain whitespace or control characters")
    command = _read_argv(v, f"{path}.command", msg.command)
    args = _read_argv(v, f"{path}.args", msg.args)
    env = _read_env(v, f"{path}.env", msg.env, existing)
    return ContainerTarget(image=image, command=command, args=args, env=env)


def _read_argv(v: Violations, field: str, items: Iterable[str]) -> tuple[str, ...]:
    argv = tuple(items)
    if len(argv) > MAX_ARGV_ITEMS:
        v.add(field, f"at most {MAX_ARGV_ITEMS} items, got {len(argv)}")
    for i, item in enumerate(argv):
        size = len(item.encode())
        if size > MAX_ARGV_ITEM_BYTES:
            v.add(f"{field}[{i}]", f"at most {MAX_ARGV_ITEM_BYTES} bytes, got {size}")
        elif "\x00" in item:
            # exec() takes NUL-terminated strings: the item would be cut short.
            v.add(f"{field}[{i}]", "must not contain NUL")
    return argv


def _read_env(
    v: Violations, field: str, env: Mapping[str, str], existing: Mapping[str, SecretValue]
) -> dict[str, SecretValue]:
    if len(env) > MAX_ENV:
        v.add(field, f"at most {MAX_ENV} variables, got {len(env)}")
    out: dict[str, SecretValue] = {}
    total = 0
    for name in sorted(env):
        raw = env[name]
        value: SecretValue = raw
        at = f"{field}[{quote_key(name)}]"
        if not _ENV_NAME.fullmatch(name):
            v.add(at, "name must match [A-Za-z_][A-Za-z0-9_]*")
        elif name.startswith(RESERVED_ENV_PREFIX):
            v.add(at, f"names starting with {RESERVED_ENV_PREFIX} are set by Duetime")
        if raw == REDACTED:
            stored = existing.get(name)
            if stored is None:
                v.add(at, "redacted value for a variable that is not stored; send the value itself")
            else:
                value = stored
        elif "\x00" in raw:
            v.add(at, "value must not contain NUL")
        total += len(name.encode()) + secret_size(value)
        out[name] = value
    if total > MAX_ENV_BYTES:
        v.add(field, f"at most {MAX_ENV_BYTES} bytes of names and values in all, got {total}")
    return out


def _shown(value: SecretValue, redact: bool) -> str:
    if redact:
        return REDACTED
    if isinstance(value, Sealed):
        raise ValueError("a sealed secret must be opened before it is sent in clear")
    return value


def encode_target(target: Target, out: job_pb2.Target, *, redact: bool) -> None:
    """Fill ``out`` from ``target``; with ``redact``, secret values become ``[REDACTED]``
    (without it, every value must be in clear: see ``SecretBox.open_target``)."""
    match target:
        case HttpTarget():
            http = out.http
            http.SetInParent()
            http.method = _METHOD_NUMBERS[target.method]
            http.url = target.url
            for name, value in target.headers.items():
                http.headers[name] = _shown(value, redact)
            http.body = target.body
            if target.signing is not None:
                http.signing = SIGNING_NUMBERS[target.signing]
            http.token_audience = target.token_audience
        case ContainerTarget():
            container = out.container
            container.SetInParent()
            container.image = target.image
            container.command.extend(target.command)
            container.args.extend(target.args)
            for name, value in target.env.items():
                container.env[name] = _shown(value, redact)


def encode_target_clear(target: Target) -> job_pb2.Target:
    """The target with secrets in clear: for the worker that makes the call, never the API."""
    out = job_pb2.Target()
    encode_target(target, out, redact=False)
    return out
