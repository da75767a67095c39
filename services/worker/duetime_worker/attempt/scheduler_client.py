"""StartAttempt and CompleteAttempt calls gathered into StartAttempts / CompleteAttempts.

When thousands of runs come due in the same second, one RPC (and one scheduler transaction)
per run is what makes them late. Each call here joins the open batch, which is sent when it is
full or ``linger`` seconds after its first call, with a few batches in flight at once; each
caller gets its own entry's answer, or an ``EntryFailed`` shaped like the ``AioRpcError`` the
single call would have raised (an answer the batch did not carry is a retryable INTERNAL, never
a refusal). While tracing is on, each entry carries its run's trace context (``traceparent``),
so the scheduler's span for it joins the run's trace. Against a scheduler that does not serve
the batch RPCs (UNIMPLEMENTED: an old one during a rolling upgrade) the calls go one by one,
each with its trace context in metadata, and the batch RPC is tried again a while later (the
load balancer may have sent that call to the one old scheduler left).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

import grpc
from grpc import aio

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_infra.codec import target_codec as limits
from duetime_infra.tracecontext import (
    current_traceparent,
    in_trace,
    trace_metadata,
    tracing_active,
)

log = logging.getLogger(__name__)

Req = TypeVar("Req")
Resp = TypeVar("Resp")


# Each call's deadline.
RPC_TIMEOUT = 10.0
# A start or report that failed is sent again after FIRST_RETRY seconds, doubling up to
# MAX_RETRY (exact delays, no jitter).
FIRST_RETRY = 0.1
MAX_RETRY = 5.0
# Answers that will not change if asked again.
PERMANENT = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.ALREADY_EXISTS,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.UNIMPLEMENTED,
    }
)
MAX_BATCH = 500
# Starts go in smaller batches than reports: the scheduler answers a batch only when all of it
# is started, and at a herd's instant every batch in flight is worked on at once, so large start
# batches would all be answered together, late, with no target called meanwhile. Small ones
# come back early and the workers' calls overlap the scheduler's later starts, for a little
# more scheduler and PostgreSQL CPU (more transactions).
START_BATCH = 100
LINGER = 0.005
# Reports wait longer for company: nothing waits on their answer but the attempt's record, and
# at a herd's instant larger report batches cost the scheduler and PostgreSQL less a run
# (fewer transactions), leaving more of the machine to the calls still to begin.
REPORT_LINGER = 0.05
# A start asked ahead of its run's time (seconds ahead) waits up to an eighth of that time, at
# most this long: at a steady few hundred runs a second, each start would otherwise be a batch
# and a scheduler transaction of its own.
EARLY_START_LINGER = 0.5
MAX_IN_FLIGHT = 4
ATTEMPT_METADATA_KEY = "duetime-attempt"
TRACEPARENT_METADATA_KEY = "traceparent"
# After an UNIMPLEMENTED batch answer, how long calls go one by one before a batch is tried again.
BATCH_RETRY_AFTER = 60.0

# Each StartAttempts entry carries its run's whole target, so a batch's answer can be far above
# gRPC's default 4 MiB receive limit (about 65 HTTP targets with 64 KiB bodies): refused as
# RESOURCE_EXHAUSTED after the scheduler committed every start in it. The worker's channel takes
# a full batch of the largest targets the API accepts. Strings are counted at 4 bytes a
# character where the limit is in characters; each map entry or repeated item gets a few bytes
# of protobuf framing; the allowance covers the rest of an entry (ids, times, run key,
# traceparent, an error message).
_FRAMING = 16
_ENTRY_ALLOWANCE = 8 * 1024
_MAX_HTTP_TARGET_BYTES = (
    4 * limits.MAX_URL_CHARS
    + limits.MAX_HEADER_BYTES
    + limits.MAX_HEADERS * _FRAMING
    + limits.MAX_BODY_BYTES
)
_MAX_CONTAINER_TARGET_BYTES = (
    4 * limits.MAX_IMAGE_CHARS
    + 2 * limits.MAX_ARGV_ITEMS * (limits.MAX_ARGV_ITEM_BYTES + _FRAMING)  # command and args
    + limits.MAX_ENV_BYTES
    + limits.MAX_ENV * _FRAMING
)
MAX_ENTRY_BYTES = max(_MAX_HTTP_TARGET_BYTES, _MAX_CONTAINER_TARGET_BYTES) + _ENTRY_ALLOWANCE
MAX_ANSWER_BYTES = MAX_BATCH * MAX_ENTRY_BYTES
# The options of the worker's channel to the schedulers.
CHANNEL_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.max_receive_message_length", MAX_ANSWER_BYTES),
)


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
        self._in_flight = asyncio.Semaphore(max_in_flight)
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
            async with self._in_flight:
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


# A report: the request, its fencing token (the attempt number) and its run's traceparent.
ReportEntry = tuple[pb.CompleteAttemptRequest, int, str]


class AttemptCalls:
    """StartAttempt and CompleteAttempt for one worker, batched."""

    def __init__(
        self,
        stub: worker_service_pb2_grpc.WorkerServiceAsyncStub,
        metadata: Sequence[tuple[str, str]],
        timeout: float,
        *,
        linger: float = LINGER,
        report_linger: float = REPORT_LINGER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stub = stub
        self._metadata = tuple(metadata)
        self._timeout = timeout
        self._clock = clock
        # Until then (``clock``'s seconds) calls go one by one: the scheduler did not serve a batch.
        self._singles_until = -math.inf
        self.starts: Batcher[pb.StartAttemptRequest, pb.StartAttemptResponse] = Batcher(
            self._send_starts, max_size=START_BATCH, linger=linger
        )
        self.reports: Batcher[ReportEntry, pb.CompleteAttemptResponse] = Batcher(
            self._send_reports, linger=report_linger
        )

    async def start(
        self, request: pb.StartAttemptRequest, slack: float = 0.0
    ) -> pb.StartAttemptResponse:
        """``slack``: seconds until the run's time, for a start asked ahead of it, which may
        wait longer for company (see ``EARLY_START_LINGER``)."""
        if tracing_active() and not request.traceparent:
            traced = pb.StartAttemptRequest()
            traced.CopyFrom(request)  # the caller's request is asked again as it was
            traced.traceparent = current_traceparent("")
            request = traced
        linger = min(EARLY_START_LINGER, slack / 8)
        return await self.starts.call(request, linger if linger > LINGER else None)

    async def complete(
        self, request: pb.CompleteAttemptRequest, attempt: int
    ) -> pb.CompleteAttemptResponse:
        traceparent = current_traceparent("") if tracing_active() else ""
        return await self.reports.call((request, attempt, traceparent))

    async def _send_starts(
        self, requests: list[pb.StartAttemptRequest]
    ) -> Sequence[pb.StartAttemptResponse | Exception]:
        async def batch(
            requests: Sequence[pb.StartAttemptRequest],
        ) -> Sequence[pb.StartAttemptResponse | Exception]:
            answer: pb.StartAttemptsResponse = await self._stub.StartAttempts(
                pb.StartAttemptsRequest(starts=requests),
                metadata=self._metadata,
                timeout=self._timeout,
            )
            return [
                _entry(
                    r.error if r.HasField("error") else None,
                    r.response if r.HasField("response") else None,
                )
                for r in answer.results
            ]

        async def single(request: pb.StartAttemptRequest) -> pb.StartAttemptResponse:
            with in_trace(request.traceparent):
                response: pb.StartAttemptResponse = await self._stub.StartAttempt(
                    request, metadata=(*self._metadata, *trace_metadata()), timeout=self._timeout
                )
            return response

        return await self._batch_or_singles(batch, requests, single)

    async def _send_reports(
        self, reports: list[ReportEntry]
    ) -> Sequence[pb.CompleteAttemptResponse | Exception]:
        async def batch(
            reports: Sequence[ReportEntry],
        ) -> Sequence[pb.CompleteAttemptResponse | Exception]:
            request = pb.CompleteAttemptsRequest()
            for report, attempt, traceparent in reports:
                # Filled in place: a message given as a keyword is copied once more.
                request.reports.add(attempt=attempt, traceparent=traceparent).report.CopyFrom(
                    report
                )
            answer: pb.CompleteAttemptsResponse = await self._stub.CompleteAttempts(
                request,
                metadata=self._metadata,
                timeout=self._timeout,
            )
            return [
                _entry(
                    r.error if r.HasField("error") else None,
                    r.response if r.HasField("response") else None,
                )
                for r in answer.results
            ]

        async def single(entry: ReportEntry) -> pb.CompleteAttemptResponse:
            request, attempt, traceparent = entry
            with in_trace(traceparent):
                metadata = (
                    *self._metadata,
                    (ATTEMPT_METADATA_KEY, str(attempt)),
                    *trace_metadata(),
                )
                response: pb.CompleteAttemptResponse = await self._stub.CompleteAttempt(
                    request, metadata=metadata, timeout=self._timeout
                )
            return response

        return await self._batch_or_singles(batch, reports, single)

    async def _batch_or_singles(
        self,
        batch: Callable[[Sequence[Req]], Awaitable[Sequence[Resp | Exception]]],
        requests: Sequence[Req],
        single: Callable[[Req], Awaitable[Resp]],
    ) -> Sequence[Resp | Exception]:
        """The batch RPC's answers; one call per request for a while after the scheduler said
        it does not serve the batch RPC."""
        if self._clock() >= self._singles_until:
            try:
                return await _halving(batch, requests)
            except aio.AioRpcError as error:
                if error.code() != grpc.StatusCode.UNIMPLEMENTED:
                    raise
                self._singles_until = self._clock() + BATCH_RETRY_AFTER
                log.warning(
                    "the scheduler does not serve batch calls; calling one by one for a while",
                    extra={"action": "batch_unimplemented", "seconds": BATCH_RETRY_AFTER},
                )

        async def one(request: Req) -> Resp | Exception:
            try:
                return await single(request)
            except aio.AioRpcError as error:
                return error

        return await asyncio.gather(*(one(r) for r in requests))

    async def close(self) -> None:
        await self.starts.close()
        await self.reports.close()


async def _halving(
    batch: Callable[[Sequence[Req]], Awaitable[Sequence[Resp | Exception]]],
    requests: Sequence[Req],
) -> Sequence[Resp | Exception]:
    """``batch(requests)``; an answer too large to receive (RESOURCE_EXHAUSTED: targets larger
    than the channel allows for, or a scheduler's send limit) is asked for again in halves,
    down to single entries. Asking again is safe: a start repeated with its delivery id gets
    the same attempt back, and a report is a compare-and-set on its attempt. Failing every
    entry instead would drop runs the scheduler had just started."""
    try:
        return await batch(requests)
    except aio.AioRpcError as error:
        if error.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or len(requests) < 2:
            raise
        log.warning(
            "batch answer too large; asking again in halves",
            extra={"action": "batch_halved", "entries": len(requests)},
        )
    middle = len(requests) // 2

    async def half(part: Sequence[Req]) -> Sequence[Resp | Exception]:
        try:
            return await _halving(batch, part)
        except aio.AioRpcError as error:
            if error.code() == grpc.StatusCode.UNIMPLEMENTED:
                raise  # for the caller, to call one by one
            return [error] * len(part)

    first, second = await asyncio.gather(half(requests[:middle]), half(requests[middle:]))
    return [*first, *second]


def _entry(error: pb.EntryError | None, response: Resp | None) -> Resp | Exception:
    """An entry's answer or error; one carrying neither (a scheduler bug, a field this worker
    does not know) is a retryable failure, never read as the default answer (a refusal)."""
    if error is not None:
        return EntryFailed(error)
    if response is not None:
        return response
    return _lost("an entry answered with neither a response nor an error")
