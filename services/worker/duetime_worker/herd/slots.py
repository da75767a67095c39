"""The worker's one vocabulary of concurrency limit: a ``Limit`` is reserved (waiting in a fair
queue until a deadline), tried (``try_reserve``: now or not at all) and released, each place by
a ``Flow`` (its run's priority and team); a ``Reservation`` is one place held, given back once.

Runs wait in the worker for an execution slot, a start permit, a container launcher's permit and
HTTP connections (all in all, and to one host); start and report batches wait for their turn in
flight. Each of these is a ``WeightedSlots``: at most ``limit`` holders, and a freed place goes
straight to the next waiter in weighted fair order (``duetime_core.fairness``: the priority
whose turn it is, high 4, normal 2, low 1; within it the team whose turn it is by its weight;
first come first served within a team). So one team's backlog cannot hold back another team's
run wherever runs wait, a low-priority backlog cannot hold back a high-priority run, and low
still moves. A wait on behalf of a run asked for ahead of its time (``ahead``) is served only
when no run whose time has come waits: a herd's starts asked ahead, thousands at once, never
hold back a start that is due. A wait with a deadline ends there (TimeoutError), under one
timer for all of them (``timers``); waits that ended are dropped from the queue when they come
up, or all at once as they pile up, so a wait costs O(log n) however large the herd. A stopping
worker closes its slots: nothing waiting gets one.

Early starts are the one limit never waited for (``Permits``): taken now or not, with a reserve
for the teams holding few.
"""

from __future__ import annotations

import asyncio
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

from duetime_core.fairness import PRIORITY_WEIGHTS, PriorityFairQueue, TurnOrder
from duetime_core.jobspec import Priority
from duetime_worker.herd.timers import FIRST_PRUNE, Deadlines

# Offered here too: the consumer shares fetches between the priority topics by them.
WEIGHTS = PRIORITY_WEIGHTS

__all__ = [
    "ANYONE",
    "WEIGHTS",
    "Flow",
    "Limit",
    "Permits",
    "Reservation",
    "SlotsClosed",
    "TurnOrder",
    "WeightedSlots",
    "reserved_ahead",
]


class SlotsClosed(Exception):
    """No slot is granted any more: the worker is stopping."""


@dataclass(frozen=True, slots=True)
class Flow:
    """Whose turn a wait is: its run's priority, team and the team's weight."""

    priority: Priority = Priority.NORMAL
    team: str = ""
    weight: float = 1.0


# A wait on behalf of no team in particular.
ANYONE = Flow()


class Limit(ABC):
    """At most so many places held at once, each reserved and released by its ``Flow``."""

    @abstractmethod
    async def reserve(
        self, flow: Flow = ANYONE, deadline: float = math.inf, *, ahead: bool = False
    ) -> None:
        """Takes a place, waiting for ``flow``'s turn until ``deadline`` (the loop's clock) at
        most: TimeoutError then, with nothing taken. ``ahead``: for a run ahead of its time,
        after every waiter that is not."""

    @abstractmethod
    def try_reserve(self, flow: Flow = ANYONE) -> bool:
        """Takes a place that is free now, without waiting; False when none is."""

    @abstractmethod
    def release(self, flow: Flow = ANYONE) -> None:
        """Gives back a place ``flow`` holds."""

    async def reserved(
        self, flow: Flow = ANYONE, deadline: float = math.inf, *, ahead: bool = False
    ) -> Reservation:
        """``reserve``, the place held as a ``Reservation``."""
        await self.reserve(flow, deadline, ahead=ahead)
        return Reservation(self, flow)


async def reserved_ahead(slots: WeightedSlots, flow: Flow, due: float) -> Reservation:
    """A place for a run asked for ahead of its time ``due`` (the loop's clock): behind every
    wait that is not ahead until then, and among them, in its turn, once its time has come."""
    try:
        return await slots.reserved(flow, due, ahead=True)
    except TimeoutError:
        return await slots.reserved(flow)


class Reservation:
    """A place held at a limit, given back once: by ``release``, or at the latest on leaving
    the ``with`` block. One at no limit (``None``) gives back nothing."""

    __slots__ = ("_flow", "_limit")

    def __init__(self, limit: Limit | None, flow: Flow = ANYONE) -> None:
        self._limit = limit
        self._flow = flow

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()

    def release(self) -> None:
        limit, self._limit = self._limit, None
        if limit is not None:
            limit.release(self._flow)


def _waiting(waiter: asyncio.Future[None]) -> bool:
    return not waiter.done()


class WeightedSlots(Limit):
    def __init__(self, limit: int) -> None:
        self._free = limit
        # Waiters that left (cancelled, timed out) stay queued until they come up or are pruned.
        self._queue: PriorityFairQueue[str, asyncio.Future[None]] = PriorityFairQueue(_waiting)
        # Waiters for runs ahead of their time: served once ``_queue`` has none.
        self._ahead: PriorityFairQueue[str, asyncio.Future[None]] = PriorityFairQueue(_waiting)
        self._waiters = 0  # still waiting
        self._left = 0  # queued, no longer waiting
        self._deadlines = Deadlines(self._time_out)
        self._closed = False

    @property
    def waiting(self) -> int:
        """Callers waiting for a slot now."""
        return self._waiters

    @property
    def contended(self) -> bool:
        """Some caller is waiting for a slot."""
        return self._waiters > 0

    @property
    def exhausted(self) -> bool:
        """No slot is free: whoever asks next waits."""
        return self._free <= 0

    def close(self) -> None:
        """From now on ``reserve`` raises ``SlotsClosed``, in those waiting too."""
        self._closed = True
        while (waiter := self._next()) is not None:
            waiter.set_exception(SlotsClosed())
        self._queue.clear()
        self._ahead.clear()
        self._left = 0

    async def reserve(
        self, flow: Flow = ANYONE, deadline: float = math.inf, *, ahead: bool = False
    ) -> None:
        """Waits for a slot: ``flow``'s turn among those waiting comes by its priority and its
        team's weight, and with ``ahead`` after all who wait without it. With a ``deadline``
        (the loop's clock), TimeoutError then, with nothing taken."""
        if self._closed:
            raise SlotsClosed
        if self._free > 0:  # nobody waits while a slot is free
            self._free -= 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._left >= max(FIRST_PRUNE, self._waiters):
            self._queue.prune()
            self._ahead.prune()
            self._left = 0
        queue = self._ahead if ahead else self._queue
        queue.push(flow.priority, flow.team, flow.weight, waiter)
        self._waiters += 1
        if deadline < math.inf:
            self._deadlines.add(waiter, deadline)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.cancelled():  # it left while waiting
                self._gone()
            elif waiter.exception() is None:
                self.release()  # granted as the caller was cancelled: pass it on
            raise

    def try_reserve(self, flow: Flow = ANYONE) -> bool:
        """Takes a slot that is free now, without waiting; False when none is (or closed)."""
        if self._closed or self._free <= 0:
            return False
        self._free -= 1
        return True

    def release(self, flow: Flow = ANYONE) -> None:
        """Gives a slot back: to the next waiter in fair order, if any."""
        waiter = self._next()
        if waiter is not None:
            waiter.set_result(None)
        else:
            self._free += 1

    def _next(self) -> asyncio.Future[None] | None:
        """The next waiter in fair order, no longer counted as waiting; None when nobody waits
        (a waiter cancelled counts until its task has run, but is never given a slot)."""
        if self._waiters <= 0:
            return None
        for queue in (self._queue, self._ahead):
            try:
                waiter = queue.pop()
            except IndexError:
                continue
            self._waiters -= 1
            return waiter
        return None

    def _time_out(self, waiter: asyncio.Future[None]) -> None:
        waiter.set_exception(TimeoutError())
        self._gone()

    def _gone(self) -> None:
        self._waiters -= 1
        self._left += 1


class Permits(Limit):
    """Places never waited for (``try_reserve``; ``reserve`` is a wait whose deadline has
    passed), each given back once: attempts started ahead of their time. Up to ``limit`` go to
    whoever asks first; past it, a reserve of a tenth more goes to the teams holding few (each
    up to a tenth of the reserve). One team's herd, holding the limit, then still leaves another
    team's runs due inside it to start ahead too, rather than at the herd's instant behind its
    starts."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._reserve = limit // 10
        self._share = max(1, self._reserve // 10)
        self._taken = 0
        self._held: dict[str, int] = {}

    async def reserve(
        self, flow: Flow = ANYONE, deadline: float = math.inf, *, ahead: bool = False
    ) -> None:
        if not self.try_reserve(flow):
            raise TimeoutError

    def try_reserve(self, flow: Flow = ANYONE) -> bool:
        team = flow.team
        held = self._held.get(team, 0)
        if self._taken >= self.limit and (
            held >= self._share or self._taken >= self.limit + self._reserve
        ):
            return False
        self._taken += 1
        self._held[team] = held + 1
        return True

    def release(self, flow: Flow = ANYONE) -> None:
        team = flow.team
        held = self._held.get(team, 0)
        if held <= 0:
            return
        self._taken -= 1
        if held == 1:
            del self._held[team]
        else:
            self._held[team] = held - 1
