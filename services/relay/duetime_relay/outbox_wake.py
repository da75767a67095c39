"""What wakes the relay for its next batch: a notification that rows were added to the outbox,
or, failing one, a poll.

A connection of its own LISTENs on ``OUTBOX_CHANNEL``, which every insert into the outbox
notifies when its transaction commits. While it listens, new rows are published at once and the
relay polls only as a safety net (``idle``: rows a paused topic left, a notification lost with
its connection). While it does not (connecting, or the connection lost), the relay polls at
its short interval, as it did before listening.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from duetime_core.backoff import DoublingBackoff
from duetime_infra.pg.dispatch.outbox import OUTBOX_CHANNEL

log = logging.getLogger(__name__)

Connect = Callable[[], Awaitable["asyncpg.Connection[asyncpg.Record]"]]

# Reconnecting the listener: from FIRST_RETRY doubling up to MAX_RETRY seconds, with jitter.
FIRST_RETRY = 0.5
MAX_RETRY = 10.0
# How long closing a lost or finished listener connection may take.
CLOSE_TIMEOUT = 2.0


class OutboxWake:
    def __init__(self, rand: Callable[[], float] = random.random) -> None:
        self._rand = rand
        self._added = asyncio.Event()
        self.listening = False

    async def wait(self, stopping: asyncio.Event, short: float, idle: float) -> None:
        """Until rows were added since the last wait, ``stopping`` is set, or the poll interval
        passes: ``idle`` while listening, ``short`` otherwise."""
        await first_set(self._added, stopping, seconds=idle if self.listening else short)
        self._added.clear()

    def _notified(self, *_: Any) -> None:
        self._added.set()

    async def listen(self, connect: Connect, stopping: asyncio.Event) -> None:
        """Listens until ``stopping`` is set, on a new connection each time one is lost."""
        backoff = DoublingBackoff(FIRST_RETRY, MAX_RETRY, self._rand)
        while not stopping.is_set():
            try:
                conn = await connect()
            except Exception as error:  # whatever keeps it from listening, it polls meanwhile
                log.warning(
                    "cannot listen for outbox rows; polling",
                    extra={"action": "outbox_listen_failed", "error": repr(error)},
                )
                await first_set(stopping, seconds=backoff.next())
                continue
            try:
                await self._listen_on(conn, stopping, backoff)
            finally:
                self.listening = False
                with contextlib.suppress(Exception):
                    await conn.close(timeout=CLOSE_TIMEOUT)
            if not stopping.is_set():
                log.warning("outbox listener lost; polling", extra={"action": "outbox_listen_lost"})
                await first_set(stopping, seconds=backoff.next())

    async def _listen_on(
        self,
        conn: asyncpg.Connection[asyncpg.Record],
        stopping: asyncio.Event,
        backoff: DoublingBackoff,
    ) -> None:
        """Listens on ``conn`` until it is lost or ``stopping`` is set."""
        lost = asyncio.Event()
        conn.add_termination_listener(lambda _conn: lost.set())
        try:
            await conn.add_listener(OUTBOX_CHANNEL, self._notified)
        except Exception as error:  # the connection's end, or a server refusing: polled
            log.warning(
                "cannot listen for outbox rows; polling",
                extra={"action": "outbox_listen_failed", "error": repr(error)},
            )
            return
        self.listening = True
        self._added.set()  # rows added before this LISTEN: looked for at once
        backoff.reset()
        log.info("listening for outbox rows", extra={"action": "outbox_listening"})
        await first_set(stopping, lost)


async def first_set(*events: asyncio.Event, seconds: float | None = None) -> None:
    """Until one of ``events`` is set, or ``seconds`` pass."""
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waits:
            waiter.cancel()
