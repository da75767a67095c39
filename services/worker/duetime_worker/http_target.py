"""HTTP targets: one aiohttp session for the worker's life (it keeps no cookies: it serves every
team), the attempt timeout, the run's headers, and the operators' allow-list checked on the
address actually connected to.

The session's resolver resolves each host and keeps only the addresses the policy allows, so a
name that resolves (or re-resolves) to a refused address is never connected to. An IP literal
is never resolved by aiohttp, so it is checked before the call. Header values are never logged,
and an outcome's error names the URL by scheme and host alone: its path, query and user info may
hold a secret (a webhook's token), and the error is logged and stored on the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any
from urllib.parse import SplitResult, urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, AbstractStreamWriter, ResolveResult
from aiohttp.connector import Connection
from aiohttp.payload import BytesPayload
from aiohttp.resolver import ThreadedResolver

from duetime.jobs.v1 import job_pb2
from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_infra.tracecontext import current_traceparent
from duetime_worker.deadline import Deadline
from duetime_worker.outcome import (
    ANSWERED,
    BEGUN,
    NOT_BEGUN,
    LeaseLapsed,
    Outcome,
    SendCheck,
    no_check,
)
from duetime_worker.policy import TargetPolicy

log = logging.getLogger(__name__)

_METHODS = {
    job_pb2.HTTP_METHOD_UNSPECIFIED: "POST",
    job_pb2.HTTP_METHOD_GET: "GET",
    job_pb2.HTTP_METHOD_POST: "POST",
    job_pb2.HTTP_METHOD_PUT: "PUT",
    job_pb2.HTTP_METHOD_PATCH: "PATCH",
    job_pb2.HTTP_METHOD_DELETE: "DELETE",
}
_RETRYABLE_STATUS = {408, 429}
# Hosts whose literal-IP check is remembered (the policy never changes in a caller's life);
# past this many the memory starts over.
_LITERAL_MEMORY = 4096


class TargetRefused(OSError):
    """The allow-list forbids every address of the target's host."""


class PolicyResolver(AbstractResolver):
    """Resolves with the system resolver, then drops every address the policy refuses."""

    def __init__(self, policy: TargetPolicy, inner: AbstractResolver | None = None) -> None:
        self._policy = policy
        self._inner = inner or ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        allowed = []
        reasons = []
        for result in found:
            reason = self._policy.refusal(host, result["host"])
            if reason is None:
                allowed.append(result)
            else:
                reasons.append(reason)
        if not allowed:
            raise TargetRefused(reasons[0] if reasons else f"{host} did not resolve")
        return allowed

    async def close(self) -> None:
        await self._inner.close()


def classify_status(status: int) -> Outcome:
    if 200 <= status < 300:
        return Outcome.succeeded(status=status)
    retryable = status in _RETRYABLE_STATUS or status >= 500
    return Outcome.failed(f"HTTP {status}", retryable=retryable, status=status, call=ANSWERED)


class HttpCaller:
    """Calls HTTP targets; open with ``start()`` (inside the event loop), end with ``close()``."""

    def __init__(
        self,
        policy: TargetPolicy,
        *,
        connection_limit: int = 256,
        connections_per_host: int = 0,
        resolver: AbstractResolver | None = None,
    ) -> None:
        self._policy = policy
        self._limit = connection_limit
        self._per_host = connections_per_host
        self._inner_resolver = resolver
        self._session: aiohttp.ClientSession | None = None
        # Per host of a URL: whether it is an IP literal, and the policy's refusal if so. A herd
        # calls the same few hosts thousands of times; each is parsed and checked against the
        # allow-list once.
        self._literals: dict[str, tuple[bool, str | None]] = {}

    async def start(self) -> None:
        connector = aiohttp.TCPConnector(
            resolver=PolicyResolver(self._policy, self._inner_resolver),
            limit=self._limit,
            limit_per_host=self._per_host,
        )
        # No cookie jar: the session serves every team's jobs, and a cookie one target set
        # would otherwise go out with every later call to its host, whoever's run it is.
        self._session = aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            trust_env=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            request_class=_CheckedRequest,
        )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def call(
        self,
        run: pb.RunSpec,
        attempt: int,
        limit: float,
        check: SendCheck = no_check,
        sent: Callable[[], None] = no_check,
    ) -> Outcome:
        http = run.target.http
        headers = dict(http.headers)
        headers["Idempotency-Key"] = run.idempotency_key
        headers["Duetime-Attempt"] = str(attempt)
        # When the worker stops waiting: the target may stop too.
        headers.update(Deadline.after(limit).http_headers())
        # The caller's span (the target call's) when tracing is on, else the run's own.
        traceparent = current_traceparent(run.traceparent)
        if traceparent:
            headers["traceparent"] = traceparent
        method = _METHODS.get(http.method, "POST")
        return await self.send(method, http.url, headers, http.body, limit, check, sent)

    async def send(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes,
        limit: float,
        check: SendCheck = no_check,
        sent: Callable[[], None] = no_check,
    ) -> Outcome:
        """One request under the allow-list, classified as a target's answer is. ``check``
        runs before the connection is asked for and again with no wait between it and the
        first byte written (the headers, or the body they go out with), so a LeaseLapsed
        it raises means nothing was sent; ``sent`` runs once the request goes out."""
        assert self._session is not None, "HttpCaller.start() first"
        try:
            parts = urlsplit(url)
            host = parts.hostname or ""
        except ValueError:  # e.g. an unclosed IPv6 bracket; its message is no secret
            return Outcome.failed("invalid URL: cannot be parsed", retryable=False, call=NOT_BEGUN)
        if parts.scheme not in ("http", "https") or not host:
            return Outcome.failed(
                f"not an absolute http(s) URL: scheme {parts.scheme[:20]!r}, host {host[:200]!r}",
                retryable=False,
                call=NOT_BEGUN,
            )
        reason = self._literal_refusal(host)
        if reason is not None:
            return Outcome.failed(f"target refused: {reason}", retryable=False, call=NOT_BEGUN)
        # ``sent`` turns True (_CheckedRequest.send) before any byte of the request is
        # written: while it is False, nothing of this call can have reached the target.
        request = _Sending(check, sent)
        kwargs: dict[str, Any] = {
            "headers": headers,
            "timeout": aiohttp.ClientTimeout(total=limit),
            "allow_redirects": False,
        }
        if body:
            kwargs["data"] = _CheckedBody(body, request)
        sending = _SENDING.set(request)
        try:
            _check(request)  # before a connection is asked for
            async with self._session.request(method, url, **kwargs) as response:
                # The status decides: a body that breaks off after a 2xx must not turn a call
                # that succeeded into one that is retried. Read (and discard) a bounded body so
                # the connection can be reused, ignoring how that ends.
                with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError):
                    await response.content.read(64 * 1024)
                return classify_status(response.status)
        except LeaseLapsed:
            raise
        except TargetRefused as error:
            return Outcome.failed(f"target refused: {error}", retryable=False, call=NOT_BEGUN)
        except aiohttp.ClientConnectorError as error:
            if isinstance(error.os_error, TargetRefused):
                refused = f"target refused: {error.os_error}"
                return Outcome.failed(refused, retryable=False, call=NOT_BEGUN)
            return Outcome.failed(
                f"cannot connect to {host}: {error.os_error}", retryable=True, call=NOT_BEGUN
            )
        except TimeoutError:
            if not request.sent:
                # The timeout counts from before the wait for one of the host's pooled
                # connections (DUETIME_HTTP_CONNECTIONS_PER_HOST) and the connect: a request
                # that never left was not a slow target, so it must not spend the run's budget.
                return Outcome.handed_back(f"{NOT_SENT} within {limit:g} s", call=NOT_BEGUN)
            return Outcome.timed_out(f"no answer within {limit:g} s", call=BEGUN)
        except aiohttp.InvalidURL:  # its message is the URL
            return Outcome.failed(f"invalid URL: {_where(parts)}", retryable=False, call=NOT_BEGUN)
        except (aiohttp.ClientError, OSError, asyncio.IncompleteReadError) as error:
            if request.lapsed:  # the body's check, which aiohttp's body writer wraps
                raise LeaseLapsed from error
            return Outcome.failed(
                described_error(error, url, parts),
                retryable=True,
                call=BEGUN if request.sent else NOT_BEGUN,
            )
        finally:
            _SENDING.reset(sending)

    def _literal_refusal(self, host: str) -> str | None:
        """The policy's refusal of an IP-literal host (aiohttp never resolves one, so the
        resolver cannot check it); None for an allowed literal or a name."""
        known = self._literals.get(host)
        if known is None:
            literal = _is_ip(host)
            known = (literal, self._policy.refusal(host, host) if literal else None)
            if len(self._literals) >= _LITERAL_MEMORY:
                self._literals.clear()
            self._literals[host] = known
        return known[1]


NOT_SENT = "not called: no connection to the target's host"


class _Sending:
    """One request's send check, and whether the request has begun to go out."""

    __slots__ = ("check", "lapsed", "on_sent", "sent")

    def __init__(self, check: SendCheck, on_sent: Callable[[], None]) -> None:
        self.check = check
        self.on_sent = on_sent
        self.sent = False
        self.lapsed = False


# The request ``HttpCaller.send`` is making: aiohttp builds and sends it in the caller's task.
_SENDING: ContextVar[_Sending | None] = ContextVar("duetime_http_sending", default=None)


class _CheckedRequest(aiohttp.ClientRequest):
    """Checks the send check once connected, as the headers are about to be buffered: without
    a body they are written before the request next waits, so it is the last check before the
    first byte. From then on the target may be working. (aiohttp's TraceConfig has the same
    hook, but it traces every stage of every request: see bench/RESULTS.md, 2026-12-03.)"""

    async def send(self, conn: Connection) -> aiohttp.ClientResponse:
        request = _SENDING.get()
        if request is not None:
            _check(request)
            request.sent = True
            request.on_sent()
        return await super().send(conn)


def _check(request: _Sending) -> None:
    try:
        request.check()
    except LeaseLapsed:
        request.lapsed = True
        raise


class _CheckedBody(BytesPayload):
    """A body whose first write (the buffered headers go out with it) follows the send check
    with no wait between: the body is written by a task of its own, a loop turn after the
    headers' check."""

    def __init__(self, value: bytes, request: _Sending) -> None:
        super().__init__(value)
        self._request = request

    async def write(self, writer: AbstractStreamWriter) -> None:
        _check(self._request)
        await super().write(writer)

    async def write_with_length(
        self, writer: AbstractStreamWriter, content_length: int | None
    ) -> None:
        _check(self._request)
        await super().write_with_length(writer, content_length)


def _where(parts: SplitResult) -> str:
    """A URL as errors may show it: scheme and host, without port, path, query or user info."""
    host = parts.hostname or ""
    return f"{parts.scheme}://[{host}]" if ":" in host else f"{parts.scheme}://{host}"


def described_error(error: BaseException, url: str, parts: SplitResult) -> str:
    """``Type: message``, unless the message could show the URL (it contains "://", "@" or
    "?", or any part of the URL): then the type and where it was called. A library's message
    may carry the URL normalised (host lowercased, query re-encoded), so matching the URL's
    own text would miss it, and a password or query token would reach the run's error and
    the logs."""
    text = str(error)
    hidden = [url, parts.path if parts.path not in ("", "/") else "", parts.query, parts.fragment]
    hidden += [parts.username or "", parts.password or ""]
    if any(mark in text for mark in ("://", "@", "?")) or any(
        part and part in text for part in hidden
    ):
        return f"{type(error).__name__} calling {_where(parts)}"
    return f"{type(error).__name__}: {text}"


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
