"""StartAttempt and CompleteAttempt calls gathered into StartAttempts / CompleteAttempts.

When thousands of runs come due in the same second, one RPC (and one scheduler transaction)
per run is what makes them late: each call joins a batch (``batcher``). While tracing is on,
each entry carries its run's trace context (``traceparent``), so the scheduler's span for it
joins the run's trace. Against a scheduler that does not serve the batch RPCs (UNIMPLEMENTED:
an old one during a rolling upgrade) the calls go one by one, each with its trace context in
metadata, and the batch RPC is tried again a while later (the load balancer may have sent that
call to the one old scheduler left).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import grpc
from grpc import aio

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_infra.codec import target_codec as limits
from duetime_infra.codec.attempt_token import ATTEMPT_METADATA_KEY
from duetime_infra.tracecontext import (
    current_traceparent,
    in_trace,
    trace_metadata,
    tracing_active,
)
from duetime_worker.attempt.batcher import Batcher, entry_answer
from duetime_worker.herd.knobs import (
    EARLY_START_LINGER,
    LINGER,
    MAX_BATCH,
    REPORT_LINGER,
    START_BATCH,
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
                entry_answer(
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
                entry_answer(
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
