"""Calls gathered into batches: each call joins the open batch, which is sent when it is full or
``linger`` seconds after its first call, with a few batches in flight at once; each caller gets
its own entry's answer, or an ``EntryFailed`` shaped like the ``AioRpcError`` the single call
would have raised (an answer the batch did not carry is a retryable INTERNAL, never a refusal).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

import grpc
from grpc import aio

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_worker.herd.knobs import LINGER, MAX_BATCH, MAX_IN_FLIGHT
from duetime_worker.herd.slots import WeightedSlots

log = logging.getLogger(__name__)

Req = TypeVar("Req")
Resp = TypeVar("Resp")


class EntryFailed(aio.AioRpcError):
    """One entry of a batch failed, raised as the single call's ``AioRpcError`` would be."""

    def __init__(self, error: pb.EntryError) -> None:
        code = grpc.StatusCode.__members__.get(error.code, grpc.StatusCode.UNKNOWN)
        super().__init__(code, aio.Metadata(), aio.Metadata(), details=error.message)
        self.reason = error.reason


def _cancelled(error: BaseException) -> EntryFailed:
    """A retryable failure for the entries of a batch call that was cancelled."""
    return EntryFailed(
        pb.EntryError(code="CANCELLED", reason="BATCH_CANCELLED", message=repr(error))
    )


def _lost(what: str) -> EntryFailed:
    """A retryable failure for an entry the scheduler's answer did not account for."""
    return EntryFailed(pb.EntryError(code="INTERNAL", reason="BATCH_ANSWER_INVALID", message=what))


class Batcher(Generic[Req, Resp]):
    def __init__(
        self,
        send: Callable[[list[Req]], Awaitable[Sequence[Resp | Exception]]],
        *,
        max_size: int = MAX_BATCH,
        linger: float = LINGER,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> None:
        self._send = send
        self._max_size = max_size
        self._linger = linger
        self._in_flight = WeightedSlots(max_in_flight)
        self._pending: list[tuple[Req, asyncio.Future[Resp]]] = []
        # The open batch's timer and when it fires (loop time): uvloop answers a ``call_at``
        # whose time has come with a plain Handle, which has no ``when()``.
        self._timer: asyncio.Handle | None = None
        self._timer_at = math.inf
        self._tasks: set[asyncio.Task[None]] = set()

    async def call(self, request: Req, linger: float | None = None) -> Resp:
        """The request's answer. It waits for company up to ``linger`` seconds (the batcher's
        own by default): the open batch goes when full or when its most hurried entry's
        linger ends."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Resp] = loop.create_future()
        self._pending.append((request, future))
        send_by = loop.time() + (self._linger if linger is None else linger)
        if len(self._pending) >= self._max_size:
            self._flush()
        elif send_by < self._timer_at:
            if self._timer is not None:
                self._timer.cancel()
            self._timer, self._timer_at = loop.call_at(send_by, self._flush), send_by
        return await future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, math.inf
        while self._pending:
            batch, self._pending = (
                self._pending[: self._max_size],
                self._pending[self._max_size :],
            )
            # Outside any caller's context: the batch RPC's own spans belong to no run's trace.
            task = asyncio.create_task(self._deliver(batch), context=contextvars.Context())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _deliver(self, batch: list[tuple[Req, asyncio.Future[Resp]]]) -> None:
        live = [(r, f) for r, f in batch if not f.done()]  # callers cancelled meanwhile
        if not live:
            return
        try:
            with await self._in_flight.reserved():
                answers = await self._send([r for r, _ in live])
        except BaseException as error:
            # Including CancelledError (grpc aio's answer for a call cancelled by the channel's
            # close): a caller left unanswered would wait for good.
            failure = error if isinstance(error, Exception) else _cancelled(error)
            for _, future in live:
                if not future.done():
                    future.set_exception(failure)
            if isinstance(error, Exception):
                return
            raise
        if len(answers) != len(live):
            # Not knowing which answer is whose, every caller asks again (none may go unanswered:
            # its slot and its message's offset would be held for good).
            log.error(
                "batch answered with the wrong number of results",
                extra={"action": "batch_answer_invalid", "sent": len(live), "got": len(answers)},
            )
            answers = [_lost(f"{len(answers)} results for {len(live)} entries")] * len(live)
        for (_, future), answer in zip(live, answers, strict=True):
            if future.done():
                continue
            if isinstance(answer, Exception):
                future.set_exception(answer)
            else:
                future.set_result(answer)

    async def close(self) -> None:
        self._flush()
        with contextlib.suppress(Exception):
            await asyncio.gather(*self._tasks, return_exceptions=True)


def entry_answer(error: pb.EntryError | None, response: Resp | None) -> Resp | Exception:
    """An entry's answer or error; one carrying neither (a scheduler bug, a field this worker
    does not know) is a retryable failure, never read as the default answer (a refusal)."""
    if error is not None:
        return EntryFailed(error)
    if response is not None:
        return response
    return _lost("an entry answered with neither a response nor an error")
