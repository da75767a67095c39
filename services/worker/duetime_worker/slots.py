"""The worker's execution slots, shared between priorities and teams by weight.

Messages are taken from Kafka ahead of their time and wait for a slot once due, so the order in
which waiting runs get slots decides who goes first: a freed slot goes to a waiting run of the
priority whose turn it is (high 4, normal 2, low 1), and within it to the team whose turn it is
by its weight (``duetime_core.fairness``), first come first served within a team. A backlog of
one team's runs cannot hold back another team's, a low-priority backlog cannot hold back a
high-priority run, and low still moves. A stopping worker closes its slots: nothing waiting
gets one.
"""

from __future__ import annotations

import asyncio

from duetime_core.fairness import PRIORITY_WEIGHTS, PriorityFairQueue, TurnOrder
from duetime_core.jobspec import Priority

# Offered here too: the consumer shares fetches between the priority topics by them.
WEIGHTS = PRIORITY_WEIGHTS

__all__ = ["WEIGHTS", "SlotsClosed", "TurnOrder", "WeightedSlots"]


class SlotsClosed(Exception):
    """No slot is granted any more: the worker is stopping."""


class WeightedSlots:
    def __init__(self, total: int) -> None:
        self._free = total
        self._waiting: PriorityFairQueue[str, asyncio.Future[None]] = PriorityFairQueue()
        self._closed = False

    @property
    def contended(self) -> bool:
        """Some caller is waiting for a slot."""
        return bool(self._waiting)

    def close(self) -> None:
        """From now on ``acquire`` raises ``SlotsClosed``, in those waiting too."""
        self._closed = True
        while self._waiting:
            waiter = self._waiting.pop()
            if not waiter.done():
                waiter.set_exception(SlotsClosed())

    async def acquire(self, priority: Priority, team: str = "", weight: float = 1.0) -> None:
        """Waits for a slot: ``team``'s turn among the teams waiting at ``priority`` comes in
        proportion to ``weight``."""
        if self._closed:
            raise SlotsClosed
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.push(priority, team, weight, granted)
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled() and granted.exception() is None:
                self.release()  # granted as the caller was cancelled: pass it on
            else:
                self._waiting.discard(priority, team, granted)
            raise

    def release(self) -> None:
        while self._waiting:
            waiter = self._waiting.pop()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1
