"""The callers of ``Heartbeats.fresh``: calls about to begin, each waiting for the answer to a
beat that lists its attempt, sent after it asked. A caller is listed in one beat only, so the
later callers of a herd get beats that do not list its earlier ones again.

Kept in two places, so each beat and each answer costs only the callers it concerns: those no
beat lists yet, and those listed, grouped by their beat in the order the beats were sent."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

from duetime_worker.attempt.lifecycle import Key


@dataclass(eq=False)
class FreshCaller:
    """A caller: its attempt and what it waits on."""

    key: Key
    waiter: asyncio.Future[None]


class FreshCallers:
    def __init__(self) -> None:
        self._unlisted: list[FreshCaller] = []
        # (beat number, the callers it lists), each until that beat's answer; numbers rise.
        self._listed: deque[tuple[int, list[FreshCaller]]] = deque()

    def ask(self, key: Key) -> asyncio.Future[None]:
        """A caller for ``key``; the future is done once its beat is answered."""
        caller = FreshCaller(key, asyncio.get_running_loop().create_future())
        self._unlisted.append(caller)
        return caller.waiter

    @property
    def wanted(self) -> bool:
        """A caller waits for a beat not yet sent."""
        return bool(self._unlisted)

    def unlisted_keys(self) -> list[Key]:
        """The attempts of the callers no beat sent so far lists."""
        return [caller.key for caller in self._unlisted]

    def listed(self, beat: int) -> None:
        """Every caller not yet listed waits for the answer to beat number ``beat``."""
        if self._unlisted:
            self._listed.append((beat, self._unlisted))
            self._unlisted = []

    def answer_unlisted(self) -> None:
        """No beat is needed for the callers not yet listed (nothing to hear): they return."""
        _answer(self._unlisted)
        self._unlisted = []

    def relist(self) -> None:
        """The stream broke: the beats that listed callers will not be answered."""
        relisted = [caller for _, callers in self._listed for caller in callers]
        self._unlisted = relisted + self._unlisted
        self._listed.clear()

    def answered_through(self, beat: int) -> None:
        """Beat number ``beat`` was answered, and with it every beat before it."""
        while self._listed and self._listed[0][0] <= beat:
            _answer(self._listed.popleft()[1])


def _answer(callers: list[FreshCaller]) -> None:
    # A waiter is shielded from its caller's cancellation: done means answered.
    for caller in callers:
        if not caller.waiter.done():
            caller.waiter.set_result(None)
