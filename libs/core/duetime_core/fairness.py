"""Weighted fair order: priorities by weight, and teams within a priority by weight.

Used wherever a backlog can still be reordered: the scheduler's dispatch of held runs and
every queue of runs in the worker (execution slots, start permits, connections). Priorities take
turns by smooth weighted round-robin (high 4, normal 2, low 1), so low still moves; within a
priority each team (a flow) gets turns in proportion to its weight by stride scheduling, first
come first served inside a team. A flow that was idle starts at the current virtual time: it
cannot save up turns while it has nothing waiting.

Items that can leave while queued (a waiter gone at its deadline) are told by ``live``: one no
longer live is dropped when it comes up, without spending its flow's turn, and ``prune`` drops
them all at once.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

from duetime_core.jobspec import Priority

PRIORITY_WEIGHTS: dict[Priority, int] = {Priority.HIGH: 4, Priority.NORMAL: 2, Priority.LOW: 1}

T = TypeVar("T")
F = TypeVar("F", bound=Hashable)


class TurnOrder:
    """Which priority goes first, turn after turn: with a turn at a time, high goes first 4
    turns in 7, normal 2 and low 1."""

    def __init__(self) -> None:
        self._credit = dict.fromkeys(PRIORITY_WEIGHTS, 0)
        self._total = sum(PRIORITY_WEIGHTS.values())
        # For each priority that goes first, the order of the rest after it.
        self._orders = {
            first: (first, *(p for p in PRIORITY_WEIGHTS if p != first))
            for first in PRIORITY_WEIGHTS
        }

    def next(self) -> tuple[Priority, ...]:
        credit = self._credit
        first, most = Priority.NORMAL, -math.inf
        for priority, weight in PRIORITY_WEIGHTS.items():
            credit[priority] += weight
            if credit[priority] > most:
                first, most = priority, credit[priority]
        credit[first] -= self._total
        return self._orders[first]


def _always(_: object) -> bool:
    return True


class FairQueue(Generic[F, T]):
    """Items queued per flow; ``pop`` takes the head of the flow with the smallest pass, and
    advances that flow's pass by ``1 / weight``. Its length counts the items not yet popped,
    discarded or dropped, live or not."""

    def __init__(self, live: Callable[[T], bool] = _always) -> None:
        self._live = live
        self._items: dict[F, deque[T]] = {}
        self._weights: dict[F, float] = {}
        self._pass: dict[F, float] = {}
        self._heap: list[tuple[float, int, F]] = []
        self._vtime = 0.0
        self._seq = 0
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def push(self, flow: F, weight: float, item: T) -> None:
        queue = self._items.get(flow)
        self._weights[flow] = max(weight, 1e-9)
        if queue is None:
            queue = self._items[flow] = deque()
        if not queue:
            start = max(self._pass.get(flow, 0.0), self._vtime)
            self._pass[flow] = start
            self._schedule(flow)
        queue.append(item)
        self._size += 1

    def _schedule(self, flow: F) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (self._pass[flow], self._seq, flow))

    def pop(self) -> T:
        """The next live item in fair order; IndexError when there is none."""
        while self._heap:
            passed, _, flow = heapq.heappop(self._heap)
            queue = self._items.get(flow)
            if not queue or self._pass.get(flow) != passed:
                continue  # emptied by discard, or a stale entry
            while queue and not self._live(queue[0]):
                queue.popleft()  # gone meanwhile: dropped, the flow's turn unspent
                self._size -= 1
            if not queue:
                del self._items[flow]
                continue
            item = queue.popleft()
            self._size -= 1
            self._vtime = passed
            self._pass[flow] = passed + 1.0 / self._weights[flow]
            if queue:
                self._schedule(flow)
            else:
                del self._items[flow]
            return item
        raise IndexError("pop from an empty FairQueue")

    def discard(self, flow: F, item: T) -> bool:
        """Removes ``item`` from ``flow``'s queue; False when it was not there."""
        queue = self._items.get(flow)
        if queue is None:
            return False
        try:
            queue.remove(item)
        except ValueError:
            return False
        self._size -= 1
        if not queue:
            del self._items[flow]
        return True

    def prune(self) -> None:
        """Drops the items no longer live; the flows' turns are kept."""
        for flow, queue in list(self._items.items()):
            kept = deque(item for item in queue if self._live(item))
            self._size -= len(queue) - len(kept)
            if kept:
                self._items[flow] = kept
            else:
                del self._items[flow]

    def clear(self) -> None:
        """Drops every item; the flows' passes stay, so fairness carries over."""
        self._items.clear()
        self._heap.clear()
        self._size = 0
        self._forget_idle()

    def _forget_idle(self) -> None:
        # A flow behind the virtual time would restart at it anyway: its pass is not needed.
        self._pass = {f: p for f, p in self._pass.items() if p > self._vtime}

    def flows(self) -> Iterator[F]:
        return iter(self._items)


class PriorityFairQueue(Generic[F, T]):
    """Priorities by turn (``TurnOrder``), then flows within the priority by ``FairQueue``."""

    def __init__(self, live: Callable[[T], bool] = _always) -> None:
        self._queues: dict[Priority, FairQueue[F, T]] = {
            p: FairQueue(live) for p in PRIORITY_WEIGHTS
        }
        self._turns = TurnOrder()

    def __len__(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def push(self, priority: Priority, flow: F, weight: float, item: T) -> None:
        self._queues[priority].push(flow, weight, item)

    def pop(self) -> T:
        for priority in self._turns.next():
            queue = self._queues[priority]
            if queue:
                try:
                    return queue.pop()
                except IndexError:
                    continue  # none of its items was live
        raise IndexError("pop from an empty PriorityFairQueue")

    def prune(self) -> None:
        for queue in self._queues.values():
            queue.prune()

    def discard(self, priority: Priority, flow: F, item: T) -> bool:
        return self._queues[priority].discard(flow, item)

    def clear(self) -> None:
        for queue in self._queues.values():
            queue.clear()
