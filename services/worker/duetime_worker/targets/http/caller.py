"""HTTP targets: the run's headers, the attempt timeout, the send check, and the call's turn at
the connection limits, through Rust's reqwest (pyreqwest: less CPU a call than aiohttp, which the
herd's :00 spike spends most of a worker's time in, as `bench/herd` measures) under the
operators' allow-list, checked on the address actually connected to (``hosts``). The request
itself and what came of it are ``request``'s. A call the worker stops waiting for (its attempt
cancelled) is not aborted by pyreqwest: the request runs on until its own timeout, the call's,
and its answer is dropped.

Header values are never logged, and an outcome's error names the URL by scheme and host alone
(``request.where``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from urllib.parse import SplitResult

from pyreqwest.client import Client
from pyreqwest.http import Url

from duetime_core.jobspec import CallSigning
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
from duetime_worker.targets.http.request import NOT_SENT, parse, request, where
from duetime_worker.targets.http.signed_ahead import SignedAhead
from duetime_worker.targets.http.signer import CallSigner, SignedCall, Stamp, signed_call
from duetime_worker.targets.outcome import NOT_BEGUN, Outcome, SendCheck, no_check
from duetime_worker.targets.run import HttpCall, TargetRun
from duetime_worker.targets.target_deadline import Deadline

# URLs whose parse is remembered; past this many the memory starts over.
_URL_MEMORY = 4096


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
        signer: CallSigner | None = None,
    ) -> None:
        self._policy = policy
        self._signer = signer
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
        run: TargetRun,
        attempt: int,
        limit: float,
        check: SendCheck = no_check,
        sent: Callable[[], None] = no_check,
        flow: Flow = ANYONE,
        ahead: SignedAhead | None = None,
    ) -> Outcome:
        """The run's request (see ``send``), waiting for its connections as ``flow``, signed
        with the signatures made ``ahead`` (``sign_ahead``) when they still fit it."""
        http = run.target
        if not isinstance(http, HttpCall):
            return Outcome.failed("not an HTTP target", retryable=False, call=NOT_BEGUN)
        headers = dict(http.headers)
        headers["Idempotency-Key"] = run.idempotency_key
        headers["Duetime-Attempt"] = str(attempt)
        # When the worker stops waiting: the target may stop too.
        headers.update(Deadline.headers_after(limit))
        # The caller's span (the target call's) when tracing is on, else the run's own.
        traceparent = current_traceparent(run.traceparent) if tracing_active() else run.traceparent
        if traceparent:
            headers["traceparent"] = traceparent
        stamp = await self.prepare(signed_call(run, http, attempt), headers, ahead)
        if isinstance(stamp, Outcome):
            return stamp
        return await self.send(
            http.method, http.url, headers, http.body, limit, check, sent, flow, stamp=stamp
        )

    async def sign_ahead(self, run: TargetRun, attempt: int, within: float) -> SignedAhead | None:
        """The signatures of the run's HTTP call, sent ``within`` seconds from now, made now
        (``CallSigner.sign_ahead``); None when it is not signed or cannot be yet."""
        http = run.target
        if (
            self._signer is None
            or not isinstance(http, HttpCall)
            or http.signing is CallSigning.OFF
        ):
            return None
        call = signed_call(run, http, attempt)
        return await self._signer.sign_ahead(call, http.headers, http.body, within)

    async def prepare(
        self, call: SignedCall, headers: dict[str, str], ahead: SignedAhead | None = None
    ) -> Stamp | Outcome | None:
        """What signing a call takes (``CallSigner.prepare``); its stamp goes to ``send``. A
        worker without a signer sends a call whose signing is the team's default unsigned, and
        refuses one whose job asks for it."""
        if self._signer is not None:
            return await self._signer.prepare(call, headers, ahead)
        if call.signing is None or call.signing is CallSigning.OFF:
            return None
        return Outcome.failed(
            "not signed: this worker cannot sign calls", retryable=True, call=NOT_BEGUN
        )

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
        *,
        stamp: Stamp | None = None,
    ) -> Outcome:
        """One request under the allow-list, classified as a target's answer is. ``check``
        runs before the call waits for its turn and again as it is handed to reqwest (asking
        the lease to outlast the connect), so a LeaseLapsed it raises means nothing was sent;
        ``sent`` runs once the request is handed over. Its turn comes as ``flow`` (``_turn``);
        ``stamp`` signs it once its turn came, so its signatures are as fresh as it is."""
        target = self._allowed(url)
        if isinstance(target, Outcome):
            return target
        parsed = target[0]
        host = parsed.host_str or ""
        check()  # before the call waits for its turn
        deadline = asyncio.get_running_loop().time() + limit
        taken: list[WeightedSlots] = []
        try:
            try:
                client = await self._turn(self._gates(parsed, host), taken, host, deadline, flow)
            except (TimeoutError, TargetRefused, OSError, ValueError) as error:
                return _not_connected(error, limit, parsed.scheme, host)
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return Outcome.handed_back(f"{NOT_SENT} in time", call=NOT_BEGUN)
            if stamp is not None:
                stamp(headers, body)
            exchange = request(
                client, method, url, target, headers, body, left, check, sent, self._connect
            )
            return await self._handed(exchange, client, host, taken, deadline)
        finally:
            _release(taken)

    async def _handed(
        self,
        exchange: Awaitable[Outcome],
        client: Client,
        host: str,
        taken: list[WeightedSlots],
        deadline: float,
    ) -> Outcome:
        """What came of the request handed to ``client``; the host is marked unreachable when
        no connection was made. pyreqwest does not abort a request it was handed: when the call
        is cancelled, the request runs on until its own timeout, and keeps its turn (the gates
        ``taken``) until ``deadline``."""
        try:
            outcome = await exchange
        except asyncio.CancelledError:
            asyncio.get_running_loop().call_at(deadline, _release, list(taken))
            taken.clear()
            raise
        if outcome.call == NOT_BEGUN and outcome.retryable:
            self._hosts.unreachable(host, client)
        return outcome

    def _allowed(self, url: str) -> tuple[Url, SplitResult] | Outcome:
        """The URL parsed (``_parsed``), or the outcome of a call refused before it waits for
        its turn: a URL that does not parse, or a host the allow-list refuses as written."""
        target = self._parsed(url)
        if isinstance(target, Outcome):
            return target
        reason = self._hosts.literal_refusal(target[0].host_str or "")
        if reason is not None:
            return Outcome.failed(f"target refused: {reason}", retryable=False, call=NOT_BEGUN)
        return target

    def _gates(self, parsed: Url, host: str) -> tuple[WeightedSlots, ...]:
        """The limits the call takes its turn at, in order: its host's own limit first (a call
        waiting for a busy host holds no slot that a call to another host could use)."""
        if self._per_host > 0:
            origin = f"{parsed.scheme}://{host}:{parsed.port_or_known_default}"
            return (self._hosts.gate(origin, self._per_host), self._gate)
        return (self._gate,)

    async def _turn(
        self,
        gates: tuple[WeightedSlots, ...],
        taken: list[WeightedSlots],
        host: str,
        deadline: float,
        flow: Flow,
    ) -> Client:
        """The host's client once the call's turn came (each gate taken is added to
        ``taken``), waiting until ``deadline`` (the loop's clock) at most. The turn at each gate
        comes in weighted fair order as ``flow``: another team's calls to the same host do not
        make it wait behind all of theirs."""
        for gate in gates:
            await gate.reserve(flow, deadline)
            taken.append(gate)
        client = self._hosts.pinned(host)
        if client is not None:
            return client
        async with asyncio.timeout_at(deadline):
            return await self._hosts.client(host)

    def _parsed(self, url: str) -> tuple[Url, SplitResult] | Outcome:
        """``request.parse``, remembered: a herd calls the same few URLs thousands of times."""
        known = self._urls.get(url)
        if known is None:
            known = parse(url)
            if len(self._urls) >= _URL_MEMORY:
                self._urls.clear()
            self._urls[url] = known
        return known


def _release(gates: list[WeightedSlots]) -> None:
    for gate in gates:
        gate.release()


def _not_connected(error: Exception, limit: float, scheme: str, host: str) -> Outcome:
    """The outcome of a call that got no connection to its host: its turn or the host's
    resolution did not come within ``limit`` (TimeoutError), the allow-list refused every
    address (TargetRefused), or it did not resolve or cannot be pinned (OSError, ValueError)."""
    if isinstance(error, TimeoutError):
        # The timeout counts from before the wait for the call's turn (the limits of
        # DUETIME_HTTP_CONNECTIONS_PER_HOST and the slots) and the host's resolution: a request
        # that never left was not a slow target, so it must not spend the run's budget.
        return Outcome.handed_back(f"{NOT_SENT} within {limit:g} s", call=NOT_BEGUN)
    if isinstance(error, TargetRefused):
        return Outcome.failed(f"target refused: {error}", retryable=False, call=NOT_BEGUN)
    return Outcome.failed(
        f"cannot connect to {where(scheme, host)}: {type(error).__name__}",
        retryable=isinstance(error, OSError),
        call=NOT_BEGUN,
    )
