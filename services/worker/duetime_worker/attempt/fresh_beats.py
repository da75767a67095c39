"""The callers of ``Heartbeats.fresh``: calls about to begin, each waiting for the answer to a
beat that lists its attempt, sent after it asked. A caller is listed in one beat only, so the
later callers of a herd get beats that do not list its earlier ones again."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from duetime_worker.attempt.lifecycle import Key


@dataclass(eq=False)
class FreshCaller:
    """A caller: its attempt, what it waits on, and the number of the beat that lists it (None
    until one does)."""

    key: Key
    waiter: asyncio.Future[None]
    beat: int | None = None


class FreshCallers:
    def __init__(self) -> None:
        # Each until the answer to the beat that listed it.
        self._callers: list[FreshCaller] = []

    def ask(self, key: Key) -> asyncio.Future[None]:
        """A caller for ``key``; the future is done once its beat is answered."""
        caller = FreshCaller(key, asyncio.get_running_loop().create_future())
        self._callers.append(caller)
        return caller.waiter

    @property
    def wanted(self) -> bool:
        """A caller waits for a beat not yet sent."""
        return any(caller.beat is None for caller in self._callers)

    def unlisted(self) -> list[FreshCaller]:
        """The callers no beat sent so far lists."""
        return [caller for caller in self._callers if caller.beat is None]

    @staticmethod
    def listed(callers: list[FreshCaller], beat: int) -> None:
        """``callers`` wait for the answer to beat number ``beat``."""
        for caller in callers:
            caller.beat = beat

    def relist(self) -> None:
        """The stream broke: the beats that listed callers will not be answered."""
        for caller in self._callers:
            caller.beat = None

    def answered(self, callers: list[FreshCaller]) -> None:
        """These callers' beat was answered (or had nothing to hear): they return."""
        for caller in callers:
            if not caller.waiter.done():
                caller.waiter.set_result(None)
        # A waiter is shielded from its caller's cancellation: done means answered.
        self._callers = [caller for caller in self._callers if not caller.waiter.done()]

    def answered_through(self, beat: int) -> None:
        """Beat number ``beat`` was answered, and with it every beat before it."""
        self.answered([c for c in self._callers if c.beat is not None and c.beat <= beat])
