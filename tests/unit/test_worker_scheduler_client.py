"""The worker's call batcher and its view of the server's clock."""

from __future__ import annotations

import asyncio

import grpc
import pytest
import uvloop
from google.protobuf.timestamp_pb2 import Timestamp
from grpc import aio

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_worker.attempt.batcher import Batcher, EntryFailed
from duetime_worker.attempt.runner import RecentKeys
from duetime_worker.attempt.scheduler_client import AttemptCalls
from duetime_worker.attempt.server_clock import ServerClock
from duetime_worker.herd.knobs import EARLY_START_LINGER


async def test_calls_made_together_go_in_batches_and_each_gets_its_own_answer() -> None:
    sent: list[list[int]] = []

    async def send(requests: list[int]) -> list[int | Exception]:
        sent.append(list(requests))
        await asyncio.sleep(0.01)
        return [
            EntryFailed(pb.EntryError(code="ABORTED", reason="STALE_ATTEMPT", message="no"))
            if r == 7
            else r * 10
            for r in requests
        ]

    batcher: Batcher[int, int] = Batcher(send, max_size=4, linger=0.05)
    results = await asyncio.gather(*(batcher.call(i) for i in range(10)), return_exceptions=True)
    assert sorted(len(b) for b in sent) == [2, 4, 4]
    assert sorted(r for b in sent for r in b) == list(range(10))
    failed = results[7]
    assert isinstance(failed, EntryFailed)
    assert (failed.code(), failed.reason, failed.details()) == (
        grpc.StatusCode.ABORTED,
        "STALE_ATTEMPT",
        "no",
    )
    assert [r for i, r in enumerate(results) if i != 7] == [i * 10 for i in range(10) if i != 7]


async def test_a_patient_call_goes_with_the_next_hurried_one() -> None:
    sent: list[list[int]] = []

    async def send(requests: list[int]) -> list[int | Exception]:
        sent.append(list(requests))
        return list(requests)

    batcher: Batcher[int, int] = Batcher(send, linger=60)
    patient = asyncio.ensure_future(batcher.call(1))
    hurried = batcher.call(2, linger=0)
    assert list(await asyncio.wait_for(asyncio.gather(patient, hurried), 5)) == [1, 2]
    assert sent == [[1, 2]]


def test_calls_due_at_once_join_one_batch_under_uvloop() -> None:
    """The services' loop: uvloop answers a timer due within a millisecond with a plain Handle
    (no ``when()``), which a later call must still be able to compare its own time with."""
    sent: list[list[int]] = []

    async def send(requests: list[int]) -> list[int | Exception]:
        sent.append(list(requests))
        return list(requests)

    async def herd() -> list[int]:
        batcher: Batcher[int, int] = Batcher(send, linger=60)
        calls = [batcher.call(i, linger=0) for i in range(3)]
        return list(await asyncio.wait_for(asyncio.gather(*calls), 5))

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        assert runner.run(herd()) == [0, 1, 2]
    assert sent == [[0, 1, 2]]


class StartTimes:
    """Answers every start, noting the loop time each batch of them arrived."""

    def __init__(self) -> None:
        self.arrived: list[tuple[float, list[str]]] = []

    async def StartAttempts(  # noqa: N802
        self, request: pb.StartAttemptsRequest, **kwargs: object
    ) -> pb.StartAttemptsResponse:
        runs = [s.run_id for s in request.starts]
        self.arrived.append((asyncio.get_running_loop().time(), runs))
        started = pb.StartAttemptResponse(decision=pb.START_DECISION_STARTED, attempt=1)
        return pb.StartAttemptsResponse(
            results=[pb.StartAttemptsResult(response=started) for _ in runs]
        )


async def test_a_start_asked_well_ahead_of_its_run_waits_longer_for_company() -> None:
    scheduler = StartTimes()
    calls = AttemptCalls(scheduler, (), 1.0)  # type: ignore[arg-type]
    loop = asyncio.get_running_loop()
    asked = loop.time()
    await calls.start(pb.StartAttemptRequest(run_id="ahead"), slack=8.0)
    asked_due = loop.time()
    await calls.start(pb.StartAttemptRequest(run_id="due"))
    (ahead_at, ahead), (due_at, due) = scheduler.arrived
    assert (ahead, due) == (["ahead"], ["due"])
    assert ahead_at - asked >= EARLY_START_LINGER * 0.9
    assert due_at - asked_due < EARLY_START_LINGER / 2
    await calls.close()


async def test_a_failed_batch_fails_every_call_in_it() -> None:
    async def send(requests: list[int]) -> list[int | Exception]:
        raise ConnectionError("down")

    batcher: Batcher[int, int] = Batcher(send, linger=0.001)
    results = await asyncio.gather(batcher.call(1), batcher.call(2), return_exceptions=True)
    assert all(isinstance(r, ConnectionError) for r in results)


def test_the_server_clock_runs_behind_by_the_answer_travel_time_never_ahead() -> None:
    wall = [1000.0]
    clock = ServerClock(lambda: wall[0])
    due = Timestamp(seconds=1010)
    assert clock.seconds_until(due) == 0  # nothing seen yet: ask the scheduler
    clock.observe(Timestamp(seconds=1003))  # the server is 3 s ahead of this host
    assert clock.seconds_until(due) == pytest.approx(7)
    wall[0] = 1008.0
    assert clock.seconds_until(due) == 0


def test_an_attempt_is_executed_once_however_often_it_is_delivered() -> None:
    executed = RecentKeys(capacity=2)
    assert executed.first(("run-a", 1))
    assert not executed.first(("run-a", 1))
    assert executed.first(("run-a", 2))  # a new attempt of the same run runs
    assert executed.first(("run-b", 1))
    assert executed.first(("run-a", 1))  # forgotten beyond the capacity


class OldScheduler:
    """A scheduler without the batch RPCs (older than any a rolling upgrade meets now)."""

    def __init__(self) -> None:
        self.single_calls = 0

    async def StartAttempts(self, *args: object, **kwargs: object) -> pb.StartAttemptsResponse:  # noqa: N802
        raise aio.AioRpcError(grpc.StatusCode.UNIMPLEMENTED, aio.Metadata(), aio.Metadata())

    async def CompleteAttempts(  # noqa: N802
        self, *args: object, **kwargs: object
    ) -> pb.CompleteAttemptsResponse:
        raise aio.AioRpcError(grpc.StatusCode.UNIMPLEMENTED, aio.Metadata(), aio.Metadata())

    async def StartAttempt(self, *args: object, **kwargs: object) -> pb.StartAttemptResponse:  # noqa: N802
        self.single_calls += 1
        return pb.StartAttemptResponse(decision=pb.START_DECISION_STARTED, attempt=1)

    async def CompleteAttempt(  # noqa: N802
        self, *args: object, **kwargs: object
    ) -> pb.CompleteAttemptResponse:
        self.single_calls += 1
        return pb.CompleteAttemptResponse(run_state="RUN_STATE_SUCCEEDED")


async def test_starts_and_reports_go_as_batches_only() -> None:
    scheduler = OldScheduler()
    calls = AttemptCalls(scheduler, (), 1.0, linger=0.001)  # type: ignore[arg-type]
    with pytest.raises(aio.AioRpcError) as started:
        await calls.start(pb.StartAttemptRequest(run_id="a"))
    with pytest.raises(aio.AioRpcError) as completed:
        await calls.complete(pb.CompleteAttemptRequest(run_id="a"), 1)
    assert [started.value.code(), completed.value.code()] == [grpc.StatusCode.UNIMPLEMENTED] * 2
    assert scheduler.single_calls == 0
    await calls.close()


async def test_a_batch_answered_with_the_wrong_number_of_results_fails_every_call() -> None:
    async def send(requests: list[int]) -> list[int | Exception]:
        return [r * 10 for r in requests[1:]]

    batcher: Batcher[int, int] = Batcher(send, max_size=3, linger=0.001)
    results = await asyncio.wait_for(
        asyncio.gather(*(batcher.call(i) for i in range(3)), return_exceptions=True), 5
    )
    for result in results:  # every caller answered, with a retryable error
        assert isinstance(result, EntryFailed)
        assert result.code() == grpc.StatusCode.INTERNAL


class BlankScheduler:
    """Answers every batch entry with neither a response nor an error."""

    async def StartAttempts(  # noqa: N802
        self, request: pb.StartAttemptsRequest, **kwargs: object
    ) -> pb.StartAttemptsResponse:
        return pb.StartAttemptsResponse(results=[pb.StartAttemptsResult() for _ in request.starts])

    async def CompleteAttempts(  # noqa: N802
        self, request: pb.CompleteAttemptsRequest, **kwargs: object
    ) -> pb.CompleteAttemptsResponse:
        return pb.CompleteAttemptsResponse(
            results=[pb.CompleteAttemptsResult() for _ in request.reports]
        )


async def test_an_entry_with_neither_answer_nor_error_is_a_retryable_failure() -> None:
    calls = AttemptCalls(BlankScheduler(), (), 1.0, linger=0.001)  # type: ignore[arg-type]
    # Read as an answer, it would be START_DECISION_UNSPECIFIED: a refusal, the message dropped.
    with pytest.raises(EntryFailed) as started:
        await calls.start(pb.StartAttemptRequest(run_id="a"))
    assert started.value.code() == grpc.StatusCode.INTERNAL
    with pytest.raises(EntryFailed) as completed:
        await calls.complete(pb.CompleteAttemptRequest(run_id="a"), 1)
    assert completed.value.code() == grpc.StatusCode.INTERNAL
    await calls.close()


async def test_a_cancelled_batch_call_fails_its_callers_instead_of_leaving_them_waiting() -> None:
    # grpc aio raises CancelledError for a call cancelled by the channel's close.
    async def cancelled(requests: list[int]) -> list[int | Exception]:
        raise asyncio.CancelledError

    batcher: Batcher[int, int] = Batcher(cancelled, linger=0)
    results = await asyncio.wait_for(
        asyncio.gather(batcher.call(1), batcher.call(2), return_exceptions=True), 5
    )
    assert [type(r) for r in results] == [EntryFailed, EntryFailed]
    assert all(
        isinstance(r, EntryFailed) and r.code() == grpc.StatusCode.CANCELLED for r in results
    )
    await batcher.close()
