"""One HTTP request handed to reqwest, and what came of it: the target's URL read as reqwest
reads it, the request built and sent right after the last send check, its answer classified,
and how far a failed one got, read from reqwest's error.

An outcome's error names the URL by scheme and host alone: its path, query and user info may
hold a secret (a webhook's token), and the error is logged and stored on the run.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from datetime import timedelta
from urllib.parse import SplitResult, urlsplit

from pyreqwest import exceptions as rx
from pyreqwest.client import Client
from pyreqwest.http import Url

from duetime_worker.targets.outcome import ANSWERED, BEGUN, NOT_BEGUN, Outcome, SendCheck

_RETRYABLE_STATUS = {408, 429}
# What is read of an answer's body (and discarded), so its connection can be reused.
_BODY_READ = 64 * 1024
NOT_SENT = "not called: no connection to the target's host"


def classify_status(status: int) -> Outcome:
    if 200 <= status < 300:
        return Outcome.succeeded(status=status)
    retryable = status in _RETRYABLE_STATUS or status >= 500
    return Outcome.failed(f"HTTP {status}", retryable=retryable, status=status, call=ANSWERED)


def parse(url: str) -> tuple[Url, SplitResult] | Outcome:
    """The URL as reqwest reads it, and split for the errors that may show it; or why the
    call is refused before it begins."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:  # e.g. an unclosed IPv6 bracket; its message is no secret
        return Outcome.failed("invalid URL: cannot be parsed", retryable=False, call=NOT_BEGUN)
    shown = where(parts.scheme, host)
    if parts.scheme not in ("http", "https") or not host:
        host = _HOST_END.split(host, maxsplit=1)[0]
        return Outcome.failed(
            f"not an absolute http(s) URL: scheme {parts.scheme[:20]!r}, host {host[:200]!r}",
            retryable=False,
            call=NOT_BEGUN,
        )
    try:
        parsed = Url(url)
    except ValueError:  # its message is the URL
        return Outcome.failed(f"invalid URL: {shown}", retryable=False, call=NOT_BEGUN)
    if not parsed.host_str:
        return Outcome.failed(f"invalid URL: {shown}", retryable=False, call=NOT_BEGUN)
    return parsed, parts


async def request(
    client: Client,
    method: str,
    url: str,
    target: tuple[Url, SplitResult],
    headers: dict[str, str],
    body: bytes,
    left: float,
    check: SendCheck,
    sent: Callable[[], None],
    connect: float,
) -> Outcome:
    """The request handed to reqwest right after the last send check (asking the lease to
    outlast ``connect``, the connect timeout), with no wait between; how far it got is told by
    reqwest's error. NOT_BEGUN and retryable: no connection could be made (nothing sent)."""
    parsed, parts = target
    try:
        builder = client.request(method, parsed).headers(headers).timeout(timedelta(seconds=left))
        if body:
            builder = builder.body_bytes(body)
        request = builder.build_streamed()
    except (rx.PyreqwestError, ValueError, TypeError) as error:  # a header it cannot send
        # (the values stay unsaid: one may be a secret)
        return Outcome.failed(
            f"invalid request: {type(error).__name__}", retryable=False, call=NOT_BEGUN
        )
    check(connect)
    sent()
    try:
        async with request as response:
            # The status decides: a body that breaks off after a 2xx must not turn a call that
            # succeeded into one that is retried. Read (and discard) a bounded body so the
            # connection can be reused, ignoring how that ends.
            with contextlib.suppress(rx.PyreqwestError):
                await response.body_reader.read(_BODY_READ)
            return classify_status(response.status)
    except rx.PyreqwestError as error:
        return _failure(error, url, parts, left, connect)


# How hyper names a request that failed while its connection was being made (TCP, TLS):
# nothing of it was sent. pyreqwest's own classes do not tell this (a request the target
# dropped unanswered raises ConnectError, the total timeout ConnectTimeoutError), so any other
# failure counts as begun.
_CONNECTING = "client error (Connect)"


def _failure(
    error: rx.PyreqwestError, url: str, parts: SplitResult, left: float, connect: float
) -> Outcome:
    """A failed request's outcome, by how far it got."""
    causes = _causes(error)
    if _CONNECTING in causes:
        if isinstance(error, rx.RequestTimeoutError):
            return Outcome.handed_back(f"{NOT_SENT} within {connect:g} s", call=NOT_BEGUN)
        return Outcome.failed(
            f"cannot connect: {described_error(error, url, parts)}", retryable=True, call=NOT_BEGUN
        )
    if isinstance(error, rx.RequestTimeoutError):
        return Outcome.timed_out(f"no answer within {left:g} s", call=BEGUN)
    return Outcome.failed(described_error(error, url, parts), retryable=True, call=BEGUN)


def _causes(error: BaseException) -> list[str]:
    """The messages of a pyreqwest error's causes, outermost first."""
    if not isinstance(error, rx.DetailedPyreqwestError):
        return []
    return [cause["message"] for cause in error.details.get("causes") or []]


def where(scheme: str, host: str) -> str:
    """A URL as errors may show it: scheme and host, without port, path, query or user info.
    The host is cut where another parser could read a path (``a.com\\token`` is host
    ``a.com`` and path ``/token`` to reqwest)."""
    host = _HOST_END.split(host, maxsplit=1)[0]
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{scheme}://{host}"


_HOST_END = re.compile(r"[\\/?#@%\s]")


def described_error(error: BaseException, url: str, parts: SplitResult) -> str:
    """``Type: message``, unless the message could show the URL (it contains "://", "@" or
    "?", or any part of the URL): then the type and where it was called. A library's message
    may carry the URL normalised (host lowercased, query re-encoded), so matching the URL's
    own text would miss it, and a password or query token would reach the run's error and
    the logs. A pyreqwest error says its message and its innermost cause (e.g. the OS's)."""
    text = str(error)
    if isinstance(error, rx.PyreqwestError):
        text = ": ".join([error.message, *_causes(error)[-1:]])
    hidden = [url, parts.path if parts.path not in ("", "/") else "", parts.query, parts.fragment]
    hidden += [parts.username or "", parts.password or ""]
    if any(mark in text for mark in ("://", "@", "?")) or any(
        part and part in text for part in hidden
    ):
        return f"{type(error).__name__} calling {where(parts.scheme, parts.hostname or '')}"
    return f"{type(error).__name__}: {text}"
