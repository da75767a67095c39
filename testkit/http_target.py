"""A real HTTP server on 127.0.0.1 that records every call and answers as each path is told:
always 200, fail N times with 500 then 200, always 400, slow (every call or the first N), or
held until the test releases it. A slow call whose client goes away before the answer is
recorded as abandoned."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

from aiohttp import web


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    time: datetime  # when the request arrived, UTC wall clock


@dataclass
class Behaviour:
    status: int = 200
    fail_first: int = 0  # answer `fail_status` this many times, then `status`
    fail_status: int = 500
    delay: float = 0.0
    # When set, only the first this-many calls are slow (held, delayed); later ones answer at
    # once.
    slow_first: int = 0
    # When given, slow calls wait until it is set before answering.
    hold: asyncio.Event | None = None
    # When given, every answer carries this Set-Cookie header.
    set_cookie: str = ""


@dataclass
class HttpTarget:
    port: int = 0
    calls: list[Call] = field(default_factory=list)
    behaviours: dict[str, Behaviour] = field(default_factory=dict)
    # Slow calls whose client disconnected before they were answered.
    abandoned: list[Call] = field(default_factory=list)
    # Calls so far per path: a herd of thousands must not cost a scan of every call per call.
    _counts: dict[str, int] = field(default_factory=dict)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def on(self, path: str, behaviour: Behaviour) -> str:
        """Programs ``path``; returns its URL."""
        self.behaviours[path] = behaviour
        return self.url(path)

    def calls_to(self, path: str) -> list[Call]:
        return [c for c in self.calls if c.path == path]

    async def _handle(self, request: web.Request) -> web.Response:
        arrived = datetime.now(UTC)
        body = await request.read()
        previous = self._counts.get(request.path, 0)
        self._counts[request.path] = previous + 1
        call = Call(request.method, request.path, dict(request.headers), body, arrived)
        self.calls.append(call)
        behaviour = self.behaviours.get(request.path, Behaviour())
        if not behaviour.slow_first or previous < behaviour.slow_first:
            try:
                if behaviour.hold is not None:
                    await behaviour.hold.wait()
                if behaviour.delay:
                    await asyncio.sleep(behaviour.delay)
            except asyncio.CancelledError:  # the client went away (handler_cancellation)
                self.abandoned.append(call)
                raise
        status = behaviour.fail_status if previous < behaviour.fail_first else behaviour.status
        headers = {"Set-Cookie": behaviour.set_cookie} if behaviour.set_cookie else None
        return web.Response(status=status, text=f"{status}\n", headers=headers)


@asynccontextmanager
async def http_target(tls: ssl.SSLContext | None = None) -> AsyncIterator[HttpTarget]:
    """A target on 127.0.0.1 (HTTPS with ``tls``)."""
    target = HttpTarget()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", target._handle)
    runner = web.AppRunner(
        app, handle_signals=False, shutdown_timeout=0.1, handler_cancellation=True
    )
    await runner.setup()
    # A herd opens thousands of connections at once: with aiohttp's default accept queue (128)
    # the kernel drops most SYNs and the callers retry a second later, which measured the test
    # target, not Duetime. Production servers queue as many (nginx 511, somaxconn 4096).
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=4096, ssl_context=tls)
    await site.start()
    target.port = int(runner.addresses[0][1])
    try:
        yield target
    finally:
        await runner.cleanup()
