"""Starts and reports, sent as StartAttempts / CompleteAttempts only; and the fetch of a
team's signing keys (GetSigningKeys).

When thousands of runs come due in the same second, one RPC (and one scheduler transaction)
per run is what makes them late: each start or report joins a batch (``batcher``), and a
single one is a batch of one. A report's fencing token (its attempt number) travels in its
entry (``AttemptReport.attempt``), never in metadata. While tracing is on, each entry carries
its run's trace context (``traceparent``), so the scheduler's span for it joins the run's
trace.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import grpc
from grpc import aio

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_infra.codec import target_codec as limits
from duetime_infra.tracecontext import current_traceparent, tracing_active
from duetime_worker.attempt.batcher import Batcher, entry_answer
from duetime_worker.attempt.wire import fetched_keys
from duetime_worker.herd.knobs import (
    EARLY_START_LINGER,
    LINGER,
    MAX_BATCH,
    REPORT_LINGER,
    START_BATCH,
)
from duetime_worker.targets.http.team_keys import Fetch, FetchedKeys

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
    """Starts and reports for one worker, batched."""

    def __init__(
        self,
        stub: worker_service_pb2_grpc.WorkerServiceAsyncStub,
        metadata: Sequence[tuple[str, str]],
        timeout: float,
        *,
        linger: float = LINGER,
        report_linger: float = REPORT_LINGER,
    ) -> None:
        self._stub = stub
        self._metadata = tuple(metadata)
        self._timeout = timeout
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

        return await _halving(batch, requests)

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

        return await _halving(batch, reports)

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
            return [error] * len(part)

    first, second = await asyncio.gather(half(requests[:middle]), half(requests[middle:]))
    return [*first, *second]


# How long a fetch of a team's signing keys may take.
FETCH_TIMEOUT = 5.0


def fetch_from(
    stub: worker_service_pb2_grpc.WorkerServiceAsyncStub,
    metadata: tuple[tuple[str, str], ...],
    worker_id: str,
    timeout: float = FETCH_TIMEOUT,
) -> Fetch:
    """A fetch of a team's signing keys from the schedulers (GetSigningKeys) through ``stub``,
    by worker ``worker_id``, for the HTTP caller's ``CallSigner``."""

    async def fetch(team: str, run_id: str) -> FetchedKeys:
        request = pb.GetSigningKeysRequest(team=team, run_id=run_id, worker_id=worker_id)
        answer = await stub.GetSigningKeys(request, metadata=metadata, timeout=timeout)
        return fetched_keys(answer)

    return fetch
