"""The worker's HTTP targets against a real HTTP server: outcome classification, the headers
sent, and the allow-list checked on the address actually connected to."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from duetime.jobs.v1 import job_pb2
from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_core.attempts import CallProgress
from duetime_core.records import AttemptOutcome
from duetime_worker.attempt.wire import target_run
from duetime_worker.targets.http import hosts
from duetime_worker.targets.http.allow_list import TargetPolicy
from duetime_worker.targets.http.caller import HttpCaller
from duetime_worker.targets.http.hosts import CONNECT_TIMEOUT, Resolve, system_resolve
from duetime_worker.targets.outcome import LeaseLapsed, Outcome, SendCheck
from duetime_worker.targets.run import TargetRun
from testkit.http_target import Behaviour, HttpTarget, http_target
from testkit.kafka import free_port
from testkit.polling import eventually, throughout
from testkit.tls import make_certs

pytestmark = pytest.mark.timeout(30)

LOOPBACK = TargetPolicy.parse(["127.0.0.1"])
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def spec(url: str, **http: object) -> TargetRun:
    return target_run(
        pb.RunSpec(
            run_id="00000000-0000-0000-0000-000000000001",
            idempotency_key="job-1/2026-01-01T00:00:00Z",
            traceparent=TRACEPARENT,
            target=job_pb2.Target(http=job_pb2.HttpTarget(url=url, **http)),  # type: ignore[arg-type]
        )
    )


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with http_target() as server:
        yield server


async def reached(target: HttpTarget) -> None:
    """Waits until a call reached ``target``."""

    async def arrived() -> bool:
        return bool(target.calls)

    await eventually(arrived, 5, "a call reached the target", interval=0.01)


async def call(
    url: str,
    policy: TargetPolicy = LOOPBACK,
    limit: float = 5,
    resolve: Resolve = system_resolve,
    **http: object,
) -> Outcome:
    caller = HttpCaller(policy, resolve=resolve)
    await caller.start()
    try:
        return await caller.call(spec(url, **http), 3, limit)
    finally:
        await caller.close()


@pytest.mark.parametrize(
    ("status", "result", "retryable"),
    [
        (200, AttemptOutcome.SUCCEEDED, False),
        (204, AttemptOutcome.SUCCEEDED, False),
        (408, AttemptOutcome.FAILED, True),
        (429, AttemptOutcome.FAILED, True),
        (500, AttemptOutcome.FAILED, True),
        (503, AttemptOutcome.FAILED, True),
        (400, AttemptOutcome.FAILED, False),
        (404, AttemptOutcome.FAILED, False),
    ],
)
async def test_status_codes_are_classified(
    target: HttpTarget, status: int, result: AttemptOutcome, retryable: bool
) -> None:
    outcome = await call(target.on(f"/s{status}", Behaviour(status=status)))
    assert (outcome.result, outcome.retryable) == (result, retryable)
    assert len(target.calls) == 1


async def test_a_slow_target_times_out_retryably(target: HttpTarget) -> None:
    outcome = await call(target.on("/slow", Behaviour(delay=5)), limit=0.3)
    assert outcome.result == AttemptOutcome.TIMED_OUT
    assert outcome.retryable
    assert outcome.call == CallProgress.BEGUN


async def test_an_answer_whose_body_never_ends_times_out_within_the_limit() -> None:
    # The worker keeps no timer of its own over an HTTP call: reqwest's total timeout must
    # end the body's read too.
    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
        while not writer.is_closing():
            writer.write(b"x")
            await writer.drain()
            await asyncio.sleep(0.05)

    server = await asyncio.start_server(endless, "127.0.0.1", 0)
    async with server:
        loop = asyncio.get_running_loop()
        started = loop.time()
        outcome = await call(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/", limit=0.5)
        took = loop.time() - started
    assert 0.45 <= took < 2.0, took
    assert (outcome.result, outcome.call) == (AttemptOutcome.TIMED_OUT, CallProgress.BEGUN)


async def test_connection_refused_is_retryable() -> None:
    outcome = await call(f"http://127.0.0.1:{free_port()}/nobody")
    assert outcome.result == AttemptOutcome.FAILED
    assert outcome.retryable
    assert "cannot connect" in outcome.error
    assert outcome.call == CallProgress.NOT_BEGUN


SECRET = "s3cr3t-t0ken"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"ftp://127.0.0.1/hooks/{SECRET}", "not an absolute http(s) URL: scheme 'ftp', host '127"),
        (f"/hooks/{SECRET}", "not an absolute http(s) URL: scheme '', host ''"),
        (f"http://127.0.0.1:99999/hooks/{SECRET}?key={SECRET}", "invalid URL: http://127.0.0.1"),
        (f"http://user:{SECRET}@127.0.0.1:99999/", "invalid URL: http://127.0.0.1"),
        (f"http://[::1/hooks/{SECRET}", "invalid URL: cannot be parsed"),
    ],
)
async def test_a_bad_url_is_reported_by_scheme_and_host_alone(url: str, shown: str) -> None:
    # The error is logged and stored on the run: the URL's path, query or user info may hold
    # a secret.
    outcome = await call(url)
    assert (outcome.result, outcome.retryable) == (AttemptOutcome.FAILED, False)
    assert outcome.error.startswith(shown), outcome.error
    assert SECRET not in outcome.error


async def test_a_broken_answer_is_reported_without_the_url() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 abc not a status\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(garbage, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        outcome = await call(f"http://127.0.0.1:{port}/hooks/{SECRET}?key={SECRET}")
    assert (outcome.result, outcome.retryable) == (AttemptOutcome.FAILED, True)
    assert outcome.error.startswith("DecodeError"), outcome.error
    assert SECRET not in outcome.error
    assert "/hooks" not in outcome.error
    assert outcome.call == CallProgress.BEGUN


async def test_the_run_headers_method_and_body_are_sent(target: HttpTarget) -> None:
    url = target.on("/hook", Behaviour())
    outcome = await call(
        url,
        method=job_pb2.HTTP_METHOD_PUT,
        headers={"Authorization": "Bearer s3cret", "X-Team": "a"},
        body=b'{"x": 1}',
    )
    assert outcome.result == AttemptOutcome.SUCCEEDED
    (seen,) = target.calls
    assert seen.method == "PUT"
    assert seen.body == b'{"x": 1}'
    assert seen.headers["Idempotency-Key"] == "job-1/2026-01-01T00:00:00Z"
    assert seen.headers["Duetime-Attempt"] == "3"
    assert seen.headers["traceparent"] == TRACEPARENT
    assert seen.headers["Authorization"] == "Bearer s3cret"
    assert seen.headers["X-Team"] == "a"


async def test_post_is_the_default_method(target: HttpTarget) -> None:
    await call(target.on("/default", Behaviour()))
    assert target.calls[0].method == "POST"


async def test_loopback_is_refused_unless_allowed(target: HttpTarget) -> None:
    url = target.on("/hook", Behaviour())
    by_ip = await call(url, policy=TargetPolicy.parse([]))
    by_name = await call(url.replace("127.0.0.1", "localhost"), policy=TargetPolicy.parse([]))
    other_net = await call(url, policy=TargetPolicy.parse(["10.0.0.0/8"]))
    for outcome in (by_ip, by_name, other_net):
        assert outcome.result == AttemptOutcome.FAILED
        assert not outcome.retryable
        assert "refused" in outcome.error
    assert target.calls == []
    listed = await call(url, policy=TargetPolicy.parse(["127.0.0.0/8"]))
    assert listed.result == AttemptOutcome.SUCCEEDED
    named = await call(
        url.replace("127.0.0.1", "localhost"), policy=TargetPolicy.parse(["localhost"])
    )
    assert named.result == AttemptOutcome.SUCCEEDED
    assert len(target.calls) == 2


async def lying_resolve(host: str) -> list[str]:
    """A DNS answer that points a public-looking name (which the system cannot resolve) at
    loopback."""
    return ["127.0.0.1"]


async def test_a_name_resolving_to_a_refused_address_is_never_connected(
    target: HttpTarget,
) -> None:
    url = target.on("/hook", Behaviour()).replace("127.0.0.1", "public.example.com")
    refused = await call(url, policy=TargetPolicy.parse([]), resolve=lying_resolve)
    assert refused.result == AttemptOutcome.FAILED
    assert not refused.retryable
    assert "non-public" in refused.error
    assert target.calls == []
    allowed = await call(url, policy=LOOPBACK, resolve=lying_resolve)
    assert allowed.result == AttemptOutcome.SUCCEEDED


async def two_calls(url: str, policy: TargetPolicy, resolve: Resolve) -> tuple[Outcome, Outcome]:
    """Two calls to ``url``, one after the other, through one caller."""
    caller = HttpCaller(policy, resolve=resolve)
    await caller.start()
    try:
        return await caller.call(spec(url), 1, 5), await caller.call(spec(url), 2, 5)
    finally:
        await caller.close()


async def test_a_name_that_re_resolves_to_a_refused_address_is_not_called_again(
    target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DNS rebinding: the pinned address is given up once the name resolves elsewhere.
    monkeypatch.setattr(hosts, "RESOLVE_TTL", 0.0)
    answers = iter([["127.0.0.1"], ["10.1.2.3"]])

    async def rebinding(host: str) -> list[str]:
        return next(answers)

    url = target.on("/hook", Behaviour()).replace("127.0.0.1", "rebind.example.com")
    first, second = await two_calls(url, LOOPBACK, rebinding)
    assert first.result == AttemptOutcome.SUCCEEDED, first.error
    assert (second.result, second.retryable) == (AttemptOutcome.FAILED, False)
    assert "not in the target allow-list" in second.error
    assert len(target.calls) == 1


async def test_a_name_whose_pinned_address_is_unreachable_moves_to_the_next(
    target: HttpTarget,
) -> None:
    # The name's first address has no listener: that call is not begun, and the next goes to
    # the next address it resolves to, as a client trying each address would.
    async def two(host: str) -> list[str]:
        return ["127.0.0.2", "127.0.0.1"]

    url = target.on("/hook", Behaviour()).replace("127.0.0.1", "two.example.com")
    first, second = await two_calls(url, TargetPolicy.parse(["127.0.0.0/8"]), two)
    assert (first.result, first.call) == (AttemptOutcome.FAILED, CallProgress.NOT_BEGUN)
    assert second.result == AttemptOutcome.SUCCEEDED, second.error
    assert len(target.calls) == 1


async def test_a_herd_to_one_name_resolves_it_once(target: HttpTarget) -> None:
    # Calls that find no pin wait for the one resolution in flight: a client (and its pool)
    # for each of them would open a connection each.
    resolved: list[str] = []

    async def counting(host: str) -> list[str]:
        resolved.append(host)
        await asyncio.sleep(0.05)
        return ["127.0.0.1"]

    url = target.on("/hook", Behaviour()).replace("127.0.0.1", "herd.example.com")
    caller = HttpCaller(LOOPBACK, resolve=counting)
    await caller.start()
    try:
        outcomes = await asyncio.gather(*(caller.call(spec(url), 1, 5) for _ in range(20)))
    finally:
        await caller.close()
    assert [o.result for o in outcomes] == [AttemptOutcome.SUCCEEDED] * 20
    assert resolved == ["herd.example.com"]


async def test_an_https_target_is_verified_against_the_system_roots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A company CA in the system's trust store (here SSL_CERT_FILE, as OpenSSL reads it) is
    # trusted; without it the handshake fails before anything is sent.
    certs = await make_certs(tmp_path)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(certs.cert, certs.key)
    async with http_target(tls) as server:
        url = server.on("/hook", Behaviour()).replace("http://127.0.0.1", "https://localhost")
        untrusted = await call(url)
        monkeypatch.setenv("SSL_CERT_FILE", certs.ca)
        trusted = await call(url)
    assert (untrusted.result, untrusted.retryable) == (AttemptOutcome.FAILED, True)
    assert untrusted.call == CallProgress.NOT_BEGUN
    assert trusted.result == AttemptOutcome.SUCCEEDED, trusted.error
    assert len(server.calls) == 1


def test_policy_rules() -> None:
    public = TargetPolicy.parse([])
    assert public.refusal("example.com", "93.184.216.34") is None
    for address in ("127.0.0.1", "10.1.2.3", "192.168.0.1", "169.254.169.254", "::1", "fe80::1"):
        assert public.refusal("h", address) is not None, address
    assert public.refusal("h", "::ffff:127.0.0.1") is not None
    listed = TargetPolicy.parse(["*.corp.example", "10.0.0.0/8"])
    assert listed.refusal("api.corp.example", "192.168.1.1") is None
    assert listed.refusal("x.other", "10.2.3.4") is None
    assert listed.refusal("x.other", "93.184.216.34") is not None
    assert listed.refusal("api.corp.example", "169.254.169.254") is not None
    with pytest.raises(ValueError, match="not a host pattern or network"):
        TargetPolicy.parse(["10.0.0.0/99"])


async def test_a_cookie_one_call_was_given_never_goes_out_with_another(
    target: HttpTarget,
) -> None:
    # One session serves every team's jobs: a cookie a target set for one run must not reach
    # the next run calling that host, whoever's it is. (A name, not an IP literal: a cookie
    # jar may keep no cookies for IP hosts.)
    target.on("/login", Behaviour(set_cookie="session=team-a-secret; Path=/"))
    caller = HttpCaller(LOOPBACK)
    await caller.start()
    try:
        for path in ("/login", "/login", "/other"):
            url = f"http://localhost:{target.port}{path}"
            outcome = await caller.call(spec(url), 1, 5)
            assert outcome.result == AttemptOutcome.SUCCEEDED, outcome.error
    finally:
        await caller.close()
    assert len(target.calls) == 3
    assert [call.headers.get("Cookie") for call in target.calls] == [None, None, None]


async def test_calls_to_one_host_share_its_connections(target: HttpTarget) -> None:
    # A herd to one host waits for its per-host connections (reused) instead of opening one
    # for each call; the total limit stays above it.
    hold = asyncio.Event()
    url = target.on("/held", Behaviour(hold=hold))
    caller = HttpCaller(LOOPBACK, connection_limit=50, connections_per_host=2)
    await caller.start()
    try:
        calls = [asyncio.create_task(caller.call(spec(url), 1, 10)) for _ in range(6)]

        async def two_arrived() -> bool:
            return len(target.calls) >= 2

        await eventually(two_arrived, 5, "two calls at the target", interval=0.01)
        # The other four wait for a connection: no third arrives, were the limit kept.
        await throughout(lambda: len(target.calls) == 2, 0.2, "two calls at the target")
        hold.set()
        outcomes = await asyncio.gather(*calls)
    finally:
        await caller.close()
    assert [o.result for o in outcomes] == [AttemptOutcome.SUCCEEDED] * 6
    assert len(target.calls) == 6


@asynccontextmanager
async def one_held_connection(
    target: HttpTarget, limit: float
) -> AsyncIterator[tuple[HttpCaller, str, asyncio.Task[Outcome]]]:
    """A caller with one connection to ``target``'s host, held by a first call (``limit``)
    that reached the target and is not answered until the block ends."""
    hold = asyncio.Event()
    url = target.on("/held", Behaviour(hold=hold))
    caller = HttpCaller(LOOPBACK, connection_limit=50, connections_per_host=1)
    await caller.start()
    try:
        first = asyncio.create_task(caller.call(spec(url), 1, limit))
        await reached(target)
        yield caller, url, first
    finally:
        hold.set()
        await caller.close()


async def test_a_call_that_never_got_a_connection_is_handed_back_not_timed_out(
    target: HttpTarget,
) -> None:
    # One connection to the host, held by a slow call: the second call's timeout runs out
    # while it waits in the pool. It never reached the target, so it is handed back (not a
    # TIMED_OUT that would spend the run's budget); the held one did reach it and times out.
    async with one_held_connection(target, 1.0) as (caller, url, first):
        second = await caller.call(spec(url), 1, 0.3)
        held = await first
    assert second.result == AttemptOutcome.HANDED_BACK
    assert "not called" in second.error
    assert held.result == AttemptOutcome.TIMED_OUT
    assert len(target.calls) == 1


class ByteCounter:
    """A bare TCP server recording each connection and every byte it receives."""

    def __init__(self) -> None:
        self.connections = 0
        self.received = b""
        self._server: asyncio.Server | None = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        while data := await reader.read(65536):
            self.received += data
            if b"\r\n\r\n" in self.received:  # a whole request's headers: answer it
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        writer.close()

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/hook"

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()


def lapsing_after(passes: int) -> SendCheck:
    """A send check that passes ``passes`` times, then finds the lease lapsed."""
    calls = 0

    def check(within: float = 0.0) -> None:
        nonlocal calls
        calls += 1
        if calls > passes:
            raise LeaseLapsed

    return check


def lease_left(seconds: float) -> SendCheck:
    """The send check of a lease that lapses ``seconds`` from now."""

    def check(within: float = 0.0) -> None:
        if within >= seconds:
            raise LeaseLapsed

    return check


@pytest.mark.parametrize(
    "lapsing",
    [
        lambda: lapsing_after(0),  # lapsed before the call waits for its turn
        lambda: lapsing_after(1),  # lapsed as it is handed to the client
        lambda: lease_left(CONNECT_TIMEOUT / 2),  # would lapse while connecting
    ],
)
async def test_a_call_whose_lease_lapsed_sends_no_byte(lapsing: Callable[[], SendCheck]) -> None:
    # A frozen worker may wake with its call past any of these points: the last check runs
    # with no wait before the request is handed over (asking the lease to outlast a connect),
    # and what it stops must never reach the target.
    counter = ByteCounter()
    async with counter as url:
        caller = HttpCaller(LOOPBACK)
        await caller.start()
        try:
            with pytest.raises(LeaseLapsed):
                await caller.call(spec(url, body=b'{"x": 1}'), 1, 5, lapsing())
            assert (await caller.call(spec(url), 2, 5)).result == AttemptOutcome.SUCCEEDED
        finally:
            await caller.close()
    assert counter.received.count(b"HTTP/1.1\r\n") == 1  # the second call alone
    assert b"duetime-attempt: 1" not in counter.received.lower()
    assert counter.connections == 1


async def test_a_cancelled_call_keeps_its_turn_while_its_request_runs_on(
    target: HttpTarget,
) -> None:
    # pyreqwest does not abort a request whose caller stopped waiting: the host's limit counts
    # it until its timeout.
    async with one_held_connection(target, 5) as (caller, url, first):
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        second = await caller.call(spec(url), 2, 0.3)
    assert second.result == AttemptOutcome.HANDED_BACK, second.error
    assert len(target.calls) == 1


async def test_calls_waiting_for_a_busy_host_leave_the_slots_to_other_hosts(
    target: HttpTarget,
) -> None:
    hold = asyncio.Event()
    busy = target.on("/held", Behaviour(hold=hold))
    other = target.on("/hook", Behaviour()).replace("127.0.0.1", "localhost")
    caller = HttpCaller(
        TargetPolicy.parse(["127.0.0.1", "localhost"]), connection_limit=2, connections_per_host=1
    )
    await caller.start()
    try:
        waiting = [asyncio.create_task(caller.call(spec(busy), 1, 5)) for _ in range(3)]

        await reached(target)
        quick = await caller.call(spec(other), 1, 2)
        hold.set()
        await asyncio.gather(*waiting)
    finally:
        hold.set()
        await caller.close()
    assert quick.result == AttemptOutcome.SUCCEEDED, quick.error


async def test_a_header_the_client_cannot_send_fails_without_its_value(
    target: HttpTarget,
) -> None:
    url = target.on("/hook", Behaviour())
    outcome = await call(url, headers={"X-Token": "s3cr3t\nvalue"})
    assert (outcome.result, outcome.retryable) == (AttemptOutcome.FAILED, False)
    assert outcome.call == CallProgress.NOT_BEGUN
    assert "s3cr3t" not in outcome.error
    assert target.calls == []


async def test_a_reused_connection_sends_nothing_once_the_lease_lapsed() -> None:
    counter = ByteCounter()
    async with counter as url:
        caller = HttpCaller(LOOPBACK)
        await caller.start()
        try:
            assert (await caller.call(spec(url), 1, 5)).result == AttemptOutcome.SUCCEEDED
            with pytest.raises(LeaseLapsed):
                await caller.call(spec(url), 2, 5, lapsing_after(1))
        finally:
            await caller.close()
    assert counter.connections == 1  # kept alive and reused for the second call
    assert counter.received.count(b"HTTP/1.1\r\n") == 1
    assert b"duetime-attempt: 2" not in counter.received.lower()


async def test_a_request_the_target_dropped_unanswered_counts_as_begun() -> None:
    # The client names this a connection error, but the request reached the target: an
    # at-most-once run must not be called again.
    async def drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.close()

    server = await asyncio.start_server(drop, "127.0.0.1", 0)
    async with server:
        outcome = await call(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/hook")
    assert (outcome.result, outcome.retryable) == (AttemptOutcome.FAILED, True)
    assert outcome.call == CallProgress.BEGUN


async def test_a_connect_that_times_out_is_handed_back_unsent() -> None:
    # A listener whose backlog is full drops the connect's SYN: the connect times out, and
    # nothing was sent.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = [socket.socket() for _ in range(3)]
        for filler in fillers:
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
        try:
            outcome = await call(f"http://127.0.0.1:{port}/hook", limit=CONNECT_TIMEOUT + 3)
        finally:
            for filler in fillers:
                filler.close()
    assert outcome.result == AttemptOutcome.HANDED_BACK, outcome.error
    assert outcome.call == CallProgress.NOT_BEGUN
