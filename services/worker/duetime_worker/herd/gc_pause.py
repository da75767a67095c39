"""The cyclic garbage collector waits while a herd's calls go out.

A young collection scans every object still alive since the last one, and at a herd's instant
that is every attempt in flight: a pause of tens of milliseconds that makes every call still to
go out later, falling wherever the allocations before the instant put it. So the collector is
paused from the first call due until the calls due have gone out (``CallBacklog``), for
``PAUSE_LONGEST`` at most (``knobs``): then it runs again and pauses no more until the calls
have gone out (a slow host's calls waiting for connections run with the collector on).
Reference counting frees most objects meanwhile; only garbage in cycles waits for the
collector's next run.
"""

from __future__ import annotations

import asyncio
import gc

from duetime_worker.herd.knobs import PAUSE_LONGEST
from duetime_worker.herd.timers import RESOLUTION


class CollectorPause:
    def __init__(self, longest: float = PAUSE_LONGEST) -> None:
        self._longest = longest
        self._since: float | None = None  # the loop's time the pause began
        self._spent = False  # a pause lasted the longest: none until ``end``
        self._timer: asyncio.TimerHandle | None = None

    @property
    def paused(self) -> bool:
        return self._since is not None

    def begin(self) -> None:
        """Pauses the collector, unless paused already, off by someone else's choice, or the
        last pause ran out and did not end since."""
        if self._since is not None or self._spent or not gc.isenabled():
            return
        loop = asyncio.get_running_loop()  # first: without a loop, nothing would end the pause
        gc.disable()
        self._since = loop.time()
        if self._timer is None:  # one timer at a time, however many pauses come and go
            self._timer = loop.call_at(self._since + self._longest, self._expire)

    def end(self) -> None:
        """The calls went out: the collector runs again, and may pause again."""
        self._spent = False
        if self._since is not None:
            self._since = None
            gc.enable()

    def _expire(self) -> None:
        self._timer = None
        if self._since is None:
            return
        loop = asyncio.get_running_loop()
        due = self._since + self._longest
        if loop.time() + RESOLUTION < due:  # a later pause than the one the timer was set for
            self._timer = loop.call_at(due, self._expire)
            return
        self._since = None
        self._spent = True
        gc.enable()
