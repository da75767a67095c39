"""Whether the worker is in a herd: its call backlog, the calls whose time has come and whose
request has not gone out yet (waiting for the event loop, or for one of the host's pooled
connections).

While there is one, a herd's calls are still being made on this worker, and a report that
may wait does (``passed``), as does a full heartbeat (the ``governor`` says so) and the garbage
collector (``gc_pause``): after the instant their RPCs, and the scheduler's and PostgreSQL's
work for them, would take CPU from calls that are already late. Waiting reports go together
once the backlog is gone, in fuller batches; each waits at most the time given (its run counts
against its team's running limit meanwhile, as it did while its call ran).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from duetime_worker.herd.gc_pause import CollectorPause
from duetime_worker.herd.timers import Deadlines


class CallBacklog:
    def __init__(self, collector: CollectorPause | None = None) -> None:
        self._waiting = 0
        self._closed = False
        # The garbage collector waits too (see ``gc_pause``).
        self._collector = collector or CollectorPause()
        # The waits in ``passed``: a herd holds thousands of them at once.
        self._waits = Deadlines()

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
        if self._waiting == 0 and not self._closed:
            self._collector.begin()
        self._waiting += 1
        done = False

        def sent() -> None:
            nonlocal done
            if done:
                return
            done = True
            self._waiting -= 1
            if self._waiting == 0:
                self._collector.end()
                self._waits.end_all()

        return sent

    async def passed(self, longest: float) -> None:
        """Returns once no call is waiting to go out, at the latest after ``longest`` seconds
        (at once when closed)."""
        if not self.holding or longest <= 0:
            return
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waits.add(waiter, loop.time() + longest)
        await waiter

    def close(self) -> None:
        """Nothing waits from now on (a stopping worker reports at once)."""
        self._closed = True
        self._collector.end()
        self._waits.end_all()
