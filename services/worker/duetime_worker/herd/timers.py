"""Waits that end by a deadline, thousands at once, under one timer of the event loop.

A herd's calls wait at once: for their turn at a connection limit (``slots``), for the call
backlog to clear. A loop timer each (``asyncio.timeout``, ``wait_for``) is a handle made,
started and cancelled for every wait; here a wait is a future in a heap, and one timer serves
the soonest.
"""

from __future__ import annotations

import asyncio
import heapq
import math
from collections.abc import Callable

# uvloop's clock and timers count whole milliseconds: a wait ends up to a millisecond early
# rather than have its timer come back again and again within the millisecond.
RESOLUTION = 0.001
# A heap or queue is cleared of the waits already ended once it holds this many entries (or
# ended waits), and then again each time it has doubled since (or they are as many as the rest).
FIRST_PRUNE = 1024

Expire = Callable[["asyncio.Future[None]"], None]


def end(waiter: asyncio.Future[None]) -> None:
    """The wait is over: its deadline ends it as an answer would."""
    waiter.set_result(None)


def time_out(waiter: asyncio.Future[None]) -> None:
    """The wait failed: its waiter raises TimeoutError."""
    waiter.set_exception(TimeoutError())


class Deadlines:
    """Futures each given to ``expire`` at its deadline (the loop's clock, up to ``RESOLUTION``
    early) unless done by then."""

    def __init__(self, expire: Expire = end) -> None:
        self._expire_one = expire
        self._heap: list[tuple[float, int, asyncio.Future[None]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf
        self._prune_at = FIRST_PRUNE

    def add(self, waiter: asyncio.Future[None], when: float) -> None:
        if len(self._heap) >= self._prune_at:
            self._heap = [entry for entry in self._heap if not entry[2].done()]
            heapq.heapify(self._heap)
            self._prune_at = max(FIRST_PRUNE, 2 * len(self._heap))
        heapq.heappush(self._heap, (when, id(waiter), waiter))
        if when < self._timer_at:
            self._wake_at(when)

    def end_all(self) -> None:
        """Ends every wait now, as an answer (``end``) would."""
        for _, _, waiter in self._heap:
            if not waiter.done():
                waiter.set_result(None)
        self._heap.clear()
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, math.inf

    def _wake_at(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        self._timer, self._timer_at = loop.call_at(when, self._expire), when

    def _expire(self) -> None:
        """Ends the waits whose time is up; the timer is set again for the next one left."""
        self._timer, self._timer_at = None, math.inf
        now = asyncio.get_running_loop().time() + RESOLUTION
        heap = self._heap
        while heap and (heap[0][0] <= now or heap[0][2].done()):
            _, _, waiter = heapq.heappop(heap)
            if not waiter.done():
                self._expire_one(waiter)
        if heap:
            self._wake_at(heap[0][0])
