"""Batched starts of runs with the largest HTTP bodies the API accepts, through a real
WorkerService on PostgreSQL: the worker's channel takes a full batch's answer, and a channel
that cannot (the 4 MiB default) gets every start by asking again in halves instead of failing
the entries the scheduler already started."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, cast

import pytest
from grpc import aio

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_infra.codec.target_codec import MAX_BODY_BYTES
from duetime_worker.attempt.scheduler_client import CHANNEL_OPTIONS, AttemptCalls
from duetime_worker.herd.knobs import START_BATCH
from testkit.api import ApiClient
from testkit.environments import ApiAndWorkers
from testkit.worker_api import WorkerClient, create_job, job_message

pytestmark = pytest.mark.timeout(90)

# One full start batch (START_BATCH, 100): half as much again as fits in gRPC's default 4 MiB
# receive limit at 64 KiB a body.
RUNS = START_BATCH


class CountingStub:
    """The stub, recording each StartAttempts call's size."""

    def __init__(self, stub: Any) -> None:
        self._stub = stub
        self.batches: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stub, name)

    def StartAttempts(self, request: pb.StartAttemptsRequest, **kwargs: Any) -> Any:  # noqa: N802
        self.batches.append(len(request.starts))
        return self._stub.StartAttempts(request, **kwargs)


async def large_runs(api: ApiClient, w: WorkerClient) -> list[uuid.UUID]:
    job = job_message()
    job.target.http.body = b"x" * MAX_BODY_BYTES
    jobs = await asyncio.gather(*(create_job(api, job) for _ in range(RUNS)))
    now = await w.now()
    return [await w.queue_scheduled_run(j.job_id, now) for j in jobs]


async def started_through(
    channel: aio.Channel, w: WorkerClient, runs: list[uuid.UUID]
) -> tuple[list[pb.StartAttemptResponse | BaseException], list[int]]:
    stub = CountingStub(worker_service_pb2_grpc.WorkerServiceStub(channel))
    metadata = (("authorization", f"Bearer {w.token}"),)
    # A long linger: every start joins one batch.
    calls = AttemptCalls(cast(Any, stub), metadata, 30.0, linger=0.5)
    answers = await asyncio.gather(
        *(
            calls.start(pb.StartAttemptRequest(run_id=str(r), delivery_id=f"d-{r}", worker_id="w"))
            for r in runs
        ),
        return_exceptions=True,
    )
    await calls.close()
    return answers, stub.batches


def assert_all_started(
    answers: list[pb.StartAttemptResponse | BaseException], runs: list[uuid.UUID]
) -> None:
    failed = [a for a in answers if isinstance(a, BaseException)]
    assert failed == []
    assert [
        (a.decision, a.attempt, a.run.run_id, len(a.run.target.http.body))
        for a in answers
        if isinstance(a, pb.StartAttemptResponse)
    ] == [(pb.START_DECISION_STARTED, 1, str(r), MAX_BODY_BYTES) for r in runs]


async def test_the_worker_channel_takes_a_batch_of_the_largest_bodies(
    env: ApiAndWorkers,
) -> None:
    api, w = env
    runs = await large_runs(api, w)
    async with aio.insecure_channel(w.address, options=CHANNEL_OPTIONS) as channel:
        answers, batches = await started_through(channel, w, runs)
    assert_all_started(answers, runs)
    assert batches == [RUNS]  # one answer, received whole


async def test_an_answer_too_large_to_receive_is_asked_for_again_in_halves(
    env: ApiAndWorkers,
) -> None:
    api, w = env
    runs = await large_runs(api, w)
    async with aio.insecure_channel(w.address) as channel:  # gRPC's default 4 MiB
        answers, batches = await started_through(channel, w, runs)
    assert_all_started(answers, runs)
    assert batches[0] == RUNS
    assert len(batches) > 1
    # No attempt burnt by asking again: the same delivery got the same attempt.
    assert [len(await w.attempts(r)) for r in runs] == [1] * RUNS
