"""HTTP targets: the run's headers, the attempt timeout, the send check and how far a call got,
through Rust's reqwest (pyreqwest: less CPU a call than aiohttp, which the herd's :00 spike
spends most of a worker's time in, as `bench/herd` measures) under the operators'
allow-list, checked on the address actually connected to (``hosts``). A call the worker
stops waiting for (its attempt cancelled) is not aborted by pyreqwest: the request runs on until
its own timeout, the call's, and its answer is dropped.

Header values are never logged, and an outcome's error names the URL by scheme and host alone:
its path, query and user info may hold a secret (a webhook's token), and the error is logged
and stored on the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from datetime import timedelta
from urllib.parse import SplitResult, urlsplit

from pyreqwest import exceptions as rx
from pyreqwest.client import Client
from pyreqwest.http import Url

from duetime.jobs.v1 import job_pb2
from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_infra.tracecontext import current_traceparent, tracing_active
from duetime_worker.herd.slots import ANYONE, Flow, WeightedSlots
from duetime_worker.targets.http.allow_list import TargetPolicy
from duetime_worker.targets.http.hosts import (
    CONNECT_TIMEOUT,
    Hosts,
    Resolve,
    TargetRefused,
    system_resolve,
)
from duetime_worker.targets.outcome import (
    ANSWERED,
    BEGUN,
    NOT_BEGUN,
    Outcome,
    SendCheck,
    no_check,
)
from duetime_worker.targets.target_deadline import Deadline

_METHODS = {
    job_pb2.HTTP_METHOD_UNSPECIFIED: "POST",
    job_pb2.HTTP_METHOD_GET: "GET",
    job_pb2.HTTP_METHOD_POST: "POST",
    job_pb2.HTTP_METHOD_PUT: "PUT",
    job_pb2.HTTP_METHOD_PATCH: "PATCH",
    job_pb2.HTTP_METHOD_DELETE: "DELETE",
}
_RETRYABLE_STATUS = {408, 429}
# What is read of an answer's body (and discarded), so its connection can be reused.
_BODY_READ = 64 * 1024
NOT_SENT = "not called: no connection to the target's host"
# URLs whose parse is remembered; past this many the memory starts over.
_URL_MEMORY = 4096


def classify_status(status: int) -> Outcome:
    if 200 <= status < 300:
        return Outcome.succeeded(status=status)
    retryable = status in _RETRYABLE_STATUS or status >= 500
    return Outcome.failed(f"HTTP {status}", retryable=retryable, status=status, call=ANSWERED)


class HttpCaller:
    """Calls HTTP targets; open with ``start()`` (inside the event loop), end with ``close()``.
    At most ``connection_limit`` calls are in flight, and ``connections_per_host`` to one host
    (0: no limit of its own); a call waits for its turn within its timeout."""

    def __init__(
        self,
        policy: TargetPolicy,
        *,
        connection_limit: int = 256,
        connections_per_host: int = 0,
        connect_timeout: float = CONNECT_TIMEOUT,
        resolve: Resolve = system_resolve,
    ) -> None:
        self._policy = policy
        self._per_host = connections_per_host
        self._gate = WeightedSlots(connection_limit)
        self._connect = connect_timeout
        self._hosts = Hosts(policy, resolve, connect_timeout)
        self._urls: dict[str, tuple[Url, SplitResult] | Outcome] = {}

    async def start(self) -> None:
        self._hosts.open()

    async def close(self) -> None:
        await self._hosts.close()

    async def call(
        self,
        run: pb.RunSpec,
        attempt: int,
        limit: float,
        check: SendCheck = no_check,
        sent: Callable[[], None] = no_check,
        flow: Flow = ANYONE,
    ) -> Outcome:
        """The run's request (see ``send``), waiting for its connections as ``flow``."""
        http = run.target.http
        headers = dict(http.headers)
        headers["Idempotency-Key"] = run.idempotency_key
        headers["Duetime-Attempt"] = str(attempt)
        # When the worker stops waiting: the target may stop too.
        headers.update(Deadline.headers_after(limit))
        # The caller's span (the target call's) when tracing is on, else the run's own.
        traceparent = current_traceparent(run.traceparent) if tracing_active() else run.traceparent
        if traceparent:
            headers["traceparent"] = traceparent
        method = _METHODS.get(http.method, "POST")
        return await self.send(method, http.url, headers, http.body, limit, check, sent, flow)

    async def send(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes,
        limit: float,
        check: SendCheck = no_check,
        sent: Callable[[], None] = no_check,
        flow: Flow = ANYONE,
    ) -> Outcome:
        """One request under the allow-list, classified as a target's answer is. ``check``
        runs before the call waits for its turn and again as it is handed to reqwest (asking
        the lease to outlast the connect), so a LeaseLapsed it raises means nothing was sent;
        ``sent`` runs once the request is handed over. Its turn at the connection limits comes
        in weighted fair order as ``flow``: another team's calls to the same host do not make
        it wait behind all of theirs."""
        target = self._parsed(url)
        if isinstance(target, Outcome):
            return target
        parsed = target[0]
        host = parsed.host_str or ""
        reason = self._hosts.literal_refusal(host)
        if reason is not None:
            return Outcome.failed(f"target refused: {reason}", retryable=False, call=NOT_BEGUN)
        check()  # before the call waits for its turn
        deadline = asyncio.get_running_loop().time() + limit
        gates: tuple[WeightedSlots, ...] = (self._gate,)
        if self._per_host > 0:
            # The host's own limit first: a call waiting for a busy host holds no slot that a
            # call to another host could use.
            origin = f"{parsed.scheme}://{host}:{parsed.port_or_known_default}"
            gates = (self._hosts.gate(origin, self._per_host), self._gate)
        taken: list[WeightedSlots] = []
        try:
            try:
                client = await self._turn(gates, taken, host, deadline, flow)
            except TimeoutError:
                # The timeout counts from before the wait for the call's turn (the limits of
                # DUETIME_HTTP_CONNECTIONS_PER_HOST and the slots) and the host's resolution:
                # a request that never left was not a slow target, so it must not spend the
                # run's budget.
                return Outcome.handed_back(f"{NOT_SENT} within {limit:g} s", call=NOT_BEGUN)
            except TargetRefused as error:
                return Outcome.failed(f"target refused: {error}", retryable=False, call=NOT_BEGUN)
            except (OSError, ValueError) as error:  # it did not resolve, or cannot be pinned
                return Outcome.failed(
                    f"cannot connect to {_where(parsed.scheme, host)}: {type(error).__name__}",
                    retryable=isinstance(error, OSError),
                    call=NOT_BEGUN,
                )
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return Outcome.handed_back(f"{NOT_SENT} in time", call=NOT_BEGUN)
            connect = self._connect
            try:
                outcome = await _request(
                    client, method, url, target, headers, body, left, check, sent, connect
                )
                if outcome.call == NOT_BEGUN and outcome.retryable:  # no connection was made
                    self._hosts.unreachable(host, client)
                return outcome
            except asyncio.CancelledError:
                # pyreqwest does not abort a request it was handed: it runs on until its own
                # timeout, and keeps its turn until then.
                asyncio.get_running_loop().call_at(deadline, _release, list(taken))
                taken.clear()
                raise
        finally:
            _release(taken)

    async def _turn(
        self,
        gates: tuple[WeightedSlots, ...],
        taken: list[WeightedSlots],
        host: str,
        deadline: float,
        flow: Flow,
    ) -> Client:
        """The host's client once the call's turn came (each gate taken is added to
        ``taken``), waiting until ``deadline`` (the loop's clock) at most."""
        for gate in gates:
            await gate.take(flow, deadline)
            taken.append(gate)
        client = self._hosts.pinned(host)
        if client is not None:
            return client
        async with asyncio.timeout_at(deadline):
            return await self._hosts.client(host)

    def _parsed(self, url: str) -> tuple[Url, SplitResult] | Outcome:
        """``_parse``, remembered: a herd calls the same few URLs thousands of times."""
        known = self._urls.get(url)
        if known is None:
            known = _parse(url)
            if len(self._urls) >= _URL_MEMORY:
                self._urls.clear()
            self._urls[url] = known
        return known


def _release(gates: list[WeightedSlots]) -> None:
    for gate in gates:
        gate.release()


def _parse(url: str) -> tuple[Url, SplitResult] | Outcome:
    """The URL as reqwest reads it, and split for the errors that may show it; or why the
    call is refused before it begins."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:  # e.g. an unclosed IPv6 bracket; its message is no secret
        return Outcome.failed("invalid URL: cannot be parsed", retryable=False, call=NOT_BEGUN)
    shown = _where(parts.scheme, host)
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


async def _request(
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


def _where(scheme: str, host: str) -> str:
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
        return f"{type(error).__name__} calling {_where(parts.scheme, parts.hostname or '')}"
    return f"{type(error).__name__}: {text}"
