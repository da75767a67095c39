"""The worker's call backlog: calls whose time has come and whose request has not gone out
yet (waiting for the event loop, or for one of the host's pooled connections).

While there is one, a herd's calls are still being made on this worker, and a report that
may wait does (``passed``), as does a full heartbeat (``heartbeat``): after the instant their
RPCs, and the scheduler's and PostgreSQL's work for them, would take CPU from calls that are
already late. Waiting reports go together once the backlog is gone, in fuller batches; each
waits at most the time given (its run counts against its team's running limit meanwhile, as it
did while its call ran).
"""

from __future__ import annotations

import asyncio
import heapq
import math
from collections.abc import Callable

# uvloop's clock and timers count whole milliseconds: a wait ends up to a millisecond early rather
# than have its timer come back again and again within the millisecond.
_RESOLUTION = 0.001


class CallBacklog:
    def __init__(self) -> None:
        self._waiting = 0
        self._closed = False
        # The waits in ``passed``: each a future, in a heap by its end under one timer of the
        # loop. A herd holds thousands of them at once, and a timer and an Event wait each
        # cost several times the future.
        self._ends: list[tuple[float, int, asyncio.Future[None]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf

    @property
    def waiting(self) -> int:
        return self._waiting

    @property
    def holding(self) -> bool:
        """Whether work that may wait does (``passed``): calls wait to go out, and the worker
        is not stopping."""
        return self._waiting > 0 and not self._closed

    def due(self) -> Callable[[], None]:
        """Counts one call whose time has come; the callable returned says it went out (or
        ended without going out), and counts only once."""
        self._waiting += 1
        done = False

        def sent() -> None:
            nonlocal done
            if done:
                return
            done = True
            self._waiting -= 1
            if self._waiting == 0:
                self._release()

        return sent

    async def passed(self, longest: float) -> None:
        """Returns once no call is waiting to go out, at the latest after ``longest`` seconds
        (at once when closed)."""
        if not self.holding or longest <= 0:
            return
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        end = loop.time() + longest
        heapq.heappush(self._ends, (end, id(waiter), waiter))
        if end < self._timer_at:
            self._wake_at(loop, end)
        await waiter

    def close(self) -> None:
        """Nothing waits from now on (a stopping worker reports at once)."""
        self._closed = True
        self._release()

    def _release(self) -> None:
        """Ends every wait."""
        for _, _, waiter in self._ends:
            if not waiter.done():
                waiter.set_result(None)
        self._ends.clear()
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, math.inf

    def _wake_at(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = loop.call_at(when, self._expire), when

    def _expire(self) -> None:
        """Ends the waits whose time is up; the timer is set again for the next."""
        self._timer, self._timer_at = None, math.inf
        loop = asyncio.get_running_loop()
        now = loop.time() + _RESOLUTION
        while self._ends and self._ends[0][0] <= now:
            _, _, waiter = heapq.heappop(self._ends)
            if not waiter.done():
                waiter.set_result(None)
        if self._ends:
            self._wake_at(loop, self._ends[0][0])
