"""Priority weights, and the worker's execution slots shared between the priorities by them.

Messages are taken from Kafka ahead of their time and wait for a slot once due, so the order in
which waiting runs get slots decides priority: a freed slot goes to a waiting run of the
priority whose turn it is (smooth weighted round-robin: high 4, normal 2, low 1), first come
first served within a priority. A backlog of low-priority runs cannot hold a high-priority one
back, and low still moves. A stopping worker closes its slots: nothing waiting gets one.
"""

from __future__ import annotations

import asyncio
from collections import deque

from duetime_core.jobspec import Priority

WEIGHTS: dict[Priority, int] = {Priority.HIGH: 4, Priority.NORMAL: 2, Priority.LOW: 1}


class TurnOrder:
    """Which priority goes first, turn after turn: with a turn at a time, high goes first 4
    turns in 7, normal 2 and low 1."""

    def __init__(self) -> None:
        self._credit = dict.fromkeys(WEIGHTS, 0)

    def next(self) -> list[Priority]:
        total = sum(WEIGHTS.values())
        for priority, weight in WEIGHTS.items():
            self._credit[priority] += weight
        first = max(WEIGHTS, key=lambda p: self._credit[p])
        self._credit[first] -= total
        return [first, *(p for p in WEIGHTS if p != first)]


class SlotsClosed(Exception):
    """No slot is granted any more: the worker is stopping."""


class WeightedSlots:
    def __init__(self, total: int) -> None:
        self._free = total
        self._waiting: dict[Priority, deque[asyncio.Future[None]]] = {p: deque() for p in WEIGHTS}
        self._turns = TurnOrder()
        self._closed = False

    def close(self) -> None:
        """From now on ``acquire`` raises ``SlotsClosed``, in those waiting too."""
        self._closed = True
        for queue in self._waiting.values():
            while queue:
                waiter = queue.popleft()
                if not waiter.done():
                    waiter.set_exception(SlotsClosed())

    async def acquire(self, priority: Priority) -> None:
        if self._closed:
            raise SlotsClosed
        if self._free > 0 and not any(self._waiting.values()):
            self._free -= 1
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting[priority].append(granted)
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled() and granted.exception() is None:
                self.release()  # granted as the caller was cancelled: pass it on
            elif granted in self._waiting[priority]:
                self._waiting[priority].remove(granted)
            raise

    def release(self) -> None:
        for priority in self._turns.next():
            queue = self._waiting[priority]
            while queue:
                waiter = queue.popleft()
                if not waiter.done():
                    waiter.set_result(None)
                    return
        self._free += 1
