"""The soak's HTTP target: idempotent by ``Idempotency-Key``, recording every call.

A call is checked when it arrives (a ``Duetime-Attempt`` below one already seen for its key is
refused 409, as a careful target does) and its effect applied when it ends, unless the key's
effect was applied before it arrived: so two calls of one key that overlap both apply, which
the soak counts as a key applied twice. Calls take a little while (a few take seconds, so
faults land mid-call), a few answer 503 without effect, and a call goes on to its end when its
client goes away (the effect happens, its report is lost).
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

from aiohttp import web

from testkit.invariants import TargetCall


@dataclass
class Recorded:
    key: str
    attempt: int
    arrived: datetime
    ended: datetime | None = None
    status: int = 0
    applied: bool = False
    overlapped: bool = False  # another call of its key was in progress when it arrived


@dataclass
class ChaosTarget:
    rng: random.Random
    # Shares of calls that take seconds, and that fail (503) without effect.
    slow_share: float = 0.03
    fail_share: float = 0.03
    port: int = 0
    calls: list[Recorded] = field(default_factory=list)
    applied: Counter[str] = field(default_factory=Counter)
    _highest: dict[str, int] = field(default_factory=dict)
    _in_progress: Counter[str] = field(default_factory=Counter)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def target_calls(self) -> list[TargetCall]:
        return [TargetCall(c.key, c.attempt, c.arrived) for c in self.calls]

    async def handle(self, request: web.Request) -> web.Response:
        call = Recorded(
            request.headers.get("Idempotency-Key", ""),
            int(request.headers.get("Duetime-Attempt", "0")),
            datetime.now(UTC),
        )
        self.calls.append(call)
        await request.read()
        if call.attempt < self._highest.get(call.key, 0):
            return self._end(call, 409)
        self._highest[call.key] = call.attempt
        call.overlapped = self._in_progress[call.key] > 0
        already = call.key in self.applied
        self._in_progress[call.key] += 1
        try:
            slow = self.rng.random() < self.slow_share
            await asyncio.sleep(self.rng.uniform(1, 4) if slow else self.rng.uniform(0.005, 0.05))
            if self.rng.random() < self.fail_share:
                return self._end(call, 503)
            if not already:
                self.applied[call.key] += 1
                call.applied = True
            return self._end(call, 200)
        finally:
            self._in_progress[call.key] -= 1

    @staticmethod
    def _end(call: Recorded, status: int) -> web.Response:
        call.ended, call.status = datetime.now(UTC), status
        return web.Response(status=status, text=f"{status}\n")


@asynccontextmanager
async def chaos_target(rng: random.Random) -> AsyncIterator[ChaosTarget]:
    target = ChaosTarget(rng)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", target.handle)
    # handler_cancellation off (aiohttp's default): a call runs to its end without its client.
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=4096)
    await site.start()
    target.port = int(runner.addresses[0][1])
    try:
        yield target
    finally:
        await runner.cleanup()
