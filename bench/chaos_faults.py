"""Random faults against a ``Fleet``, and the supervisor that restarts what died.

Kinds: kill -9 of each service (restarted after a moment, as a supervisor would), SIGSTOP of
each service held past the attempt lease and the partition TTL (then SIGCONT), and restarts of
PostgreSQL, etcd (sometimes kill -9) and Kafka. Up to ``lanes`` faults at once, but never both
schedulers, nor two dependencies, at once. Kinds come from a shuffled deck, so every kind
recurs evenly. Each fault's span (from the signal until the service is back) is recorded: the
soak tells leases lost to a fault from leases lost by a healthy worker.
"""

from __future__ import annotations

import asyncio
import logging
import random
import signal
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bench.chaos_fleet import ATTEMPT_LEASE, PARTITION_TTL, SCHEDULERS, Fleet, Slot

log = logging.getLogger("bench.chaos")

SERVICES = ("api", "relay", *SCHEDULERS, "w1", "w2")
DEPENDENCIES = ("postgres", "etcd", "kafka")
KINDS: tuple[tuple[str, str], ...] = (
    *((action, s) for action in ("kill", "freeze") for s in SERVICES),
    *(("restart", d) for d in DEPENDENCIES),
)


@dataclass(frozen=True)
class Fault:
    action: str  # kill, freeze, restart
    target: str  # a service or a dependency
    began: datetime
    ended: datetime

    @property
    def kind(self) -> str:
        return f"{self.action} {self.target}"


@dataclass
class Injector:
    fleet: Fleet
    rng: random.Random
    lanes: int = 2
    done: list[Fault] = field(default_factory=list)
    # Services that exited without being told to, restarted by the supervisor.
    crashes: Counter[str] = field(default_factory=Counter)
    _busy: set[str] = field(default_factory=set)
    _deck: list[tuple[str, str]] = field(default_factory=list)
    _started: set[tuple[str, str]] = field(default_factory=set)

    def _eligible(self, target: str) -> bool:
        if target in self._busy:
            return False
        for group in (SCHEDULERS, DEPENDENCIES):
            if target in group and self._busy & set(group):
                return False
        return True

    def _draw(self) -> tuple[str, str] | None:
        if not self._deck:
            self._deck = list(KINDS)
            self.rng.shuffle(self._deck)
        for i, (_, target) in enumerate(self._deck):
            if self._eligible(target):
                return self._deck.pop(i)
        return None

    def _more(self, until: float, every_kind: bool) -> bool:
        """Whether to start another fault: before the monotonic time ``until``; past it too,
        with ``every_kind``, while some kind has not been started yet."""
        if time.monotonic() < until:
            return True
        return every_kind and len(self._started) < len(KINDS)

    async def run(self, until: float, every: float, every_kind: bool = False) -> None:
        """Starts a fault every ``every`` seconds or so (when a lane is free; never when
        ``every`` is 0: a baseline) until the monotonic time ``until`` (with ``every_kind``,
        until every kind was started too: a short soak then covers each, however loaded the
        machine); returns once every fault has ended."""
        running: set[asyncio.Task[None]] = set()
        supervisor = asyncio.create_task(self._supervise())
        try:
            if every <= 0:
                await asyncio.sleep(until - time.monotonic())
            while every > 0 and self._more(until, every_kind):
                await asyncio.sleep(self.rng.uniform(0.5, 1.5) * every)
                while len(running) >= self.lanes:
                    _, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                drawn = self._draw()
                if drawn is not None and self._more(until, every_kind):
                    self._started.add(drawn)
                    self._busy.add(drawn[1])
                    task = asyncio.create_task(self._inject(*drawn))
                    running.add(task)
                    task.add_done_callback(running.discard)
            if running:
                await asyncio.gather(*running)
        finally:
            supervisor.cancel()
            await asyncio.gather(supervisor, return_exceptions=True)

    async def _inject(self, action: str, target: str) -> None:
        began = datetime.now(UTC)
        log.info("fault: %s %s", action, target)
        try:
            if action == "kill":
                slot = self.fleet.services[target]
                await slot.kill()
                await asyncio.sleep(self.rng.uniform(0.5, 2))
                await start_until_up(slot)
            elif action == "freeze":
                slot = self.fleet.services[target]
                slot.freeze()
                await asyncio.sleep(max(ATTEMPT_LEASE, PARTITION_TTL) + self.rng.uniform(1, 4))
                slot.thaw()
            else:
                await self._restart(target)
        finally:
            self._busy.discard(target)
        self.done.append(Fault(action, target, began, datetime.now(UTC)))

    async def _restart(self, dependency: str) -> None:
        pause = self.rng.uniform(0.5, 3)
        fleet = self.fleet
        if dependency == "postgres":
            await fleet.postgres.stop()
            await asyncio.sleep(pause)
            await again(fleet.postgres.start)
        elif dependency == "etcd":
            crash = self.rng.random() < 0.5
            await fleet.etcd.stop(signal.SIGKILL if crash else signal.SIGTERM)
            await asyncio.sleep(pause)
            await again(fleet.etcd.start, fleet.etcd.stop)
        else:
            await fleet.kafka.stop()
            await asyncio.sleep(pause)
            await again(lambda: fleet.kafka.start(within=120), fleet.kafka.stop)

    async def _supervise(self) -> None:
        """Restarts a service that exited by itself (not one a fault is working on)."""
        while True:
            await asyncio.sleep(1)
            for name, slot in self.fleet.services.items():
                if name not in self._busy and not slot.running:
                    self.crashes[name] += 1
                    log.warning("%s exited by itself: %s", name, slot.outputs[-1][-5:])
                    self._busy.add(name)
                    try:
                        await slot.kill_leftover()
                        await start_until_up(slot)
                    finally:
                        self._busy.discard(name)


async def start_until_up(slot: Slot, within: float = 180) -> None:
    """Starts the service again and again (a dependency may be down) until it serves."""
    deadline = time.monotonic() + within
    while True:
        try:
            await slot.start()
            return
        except AssertionError:
            await slot.kill_leftover()
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(1)


async def again(
    start: Callable[[], Awaitable[None]],
    clean: Callable[[], Awaitable[None]] | None = None,
    tries: int = 3,
) -> None:
    """A dependency's start, tried again (after ``clean``) when it fails on a loaded machine."""
    for n in range(tries):
        try:
            await start()
            return
        except AssertionError:
            log.exception("start failed (try %d of %d)", n + 1, tries)
            if n == tries - 1:
                raise
            if clean is not None:
                await clean()
            await asyncio.sleep(2)
