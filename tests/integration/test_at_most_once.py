"""At-most-once delivery on real PostgreSQL, through the WorkerService and the reaper: how far
a call got, as heartbeats and reports say it, decides whether an attempt that ended without a
success may be retried."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta

import grpc
import pytest

from duetime.events.v1 import events_pb2
from duetime.jobs.v1 import job_pb2, run_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime_infra.pg.attempts.reaper import reap_expired_attempts
from duetime_infra.pg.fencing import FencingToken
from testkit.api import ApiClient, failure, running_api
from testkit.worker_api import (
    WorkerClient,
    create_job,
    exchange,
    job_message,
    running_worker_api,
    trigger,
)

pytestmark = pytest.mark.timeout(60)

LEASE = timedelta(seconds=60)
STARTED = wpb.START_DECISION_STARTED
NOT_BEGUN, BEGUN = wpb.CALL_PROGRESS_NOT_BEGUN, wpb.CALL_PROGRESS_BEGUN


@dataclass
class Env:
    api: ApiClient
    w: WorkerClient
    job: job_pb2.Job
    tokens: list[FencingToken]

    async def started_run(self, request_id: str) -> uuid.UUID:
        run_id = await trigger(self.api, self.job, request_id)
        assert (await self.w.start(run_id, delivery=request_id)).decision == STARTED
        return run_id

    async def beat(self, run_id: uuid.UUID, call: wpb.CallProgress.ValueType) -> None:
        stream = self.w.stub.Heartbeat(metadata=self.w.auth())
        answer = await exchange(
            stream,
            wpb.HeartbeatRequest(
                worker_id="w-1",
                attempts=[wpb.AttemptRef(run_id=str(run_id), attempt=1, call_progress=call)],
            ),
        )
        stream.cancel()
        assert answer.directives[0].directive == wpb.DIRECTIVE_CONTINUE

    async def expire(self) -> int:
        await self.w.shift_clock(LEASE + timedelta(seconds=1))
        return await reap_expired_attempts(self.w.pool, self.tokens, 100)

    async def run(self, run_id: uuid.UUID) -> run_pb2.Run:
        name = f"{self.job.name}/runs/{run_id}"
        response = await self.api.stub.GetRun(
            svc.GetRunRequest(name=name), metadata=self.api.auth()
        )
        return response.run


async def env_for(db_dsn: str, delivery: job_pb2.Delivery.ValueType) -> AsyncIterator[Env]:
    async with running_api(db_dsn) as api, running_worker_api(db_dsn) as w:
        message = job_message()
        message.delivery = delivery
        job = await create_job(api, message)
        # The effective value is shown: unspecified is at least once.
        assert job.delivery == (delivery or job_pb2.DELIVERY_AT_LEAST_ONCE)
        partition = await w.db.fetchval(
            "SELECT partition FROM jobs WHERE job_id = $1", uuid.UUID(job.job_id)
        )
        yield Env(api, w, job, [FencingToken(partition, 0, 1)])


@pytest.fixture
async def at_most_once(db_dsn: str) -> AsyncIterator[Env]:
    async for env in env_for(db_dsn, job_pb2.DELIVERY_AT_MOST_ONCE):
        yield env


@pytest.fixture
async def at_least_once(db_dsn: str) -> AsyncIterator[Env]:
    async for env in env_for(db_dsn, job_pb2.DELIVERY_UNSPECIFIED):
        yield env


async def test_an_expired_attempt_whose_worker_said_not_begun_is_retried(
    at_most_once: Env,
) -> None:
    env = at_most_once
    run_id = await env.started_run("r1")
    await env.beat(run_id, NOT_BEGUN)
    assert await env.expire() == 1
    run = await env.run(run_id)
    assert run.state == run_pb2.RUN_STATE_RETRY_WAIT
    (attempt,) = await env.w.attempts(run_id)
    assert (attempt["outcome"], attempt["call_progress"]) == ("LEASE_EXPIRED", "NOT_BEGUN")


async def test_an_expired_attempt_whose_call_was_announced_or_unsaid_is_not_retried(
    at_most_once: Env,
) -> None:
    env = at_most_once
    announced = await env.started_run("announced")
    await env.beat(announced, NOT_BEGUN)
    await env.beat(announced, BEGUN)
    await env.beat(announced, NOT_BEGUN)  # progress never goes back
    unsaid = await env.started_run("unsaid")
    assert await env.expire() == 2
    for run_id, said in [(announced, "BEGUN"), (unsaid, None)]:
        run = await env.run(run_id)
        assert (run.state, run.reason) == (
            run_pb2.RUN_STATE_DEAD_LETTERED,
            run_pb2.RUN_REASON_OUTCOME_UNKNOWN,
        )
        assert "at-most-once" in run.reason_detail
        (attempt,) = await env.w.attempts(run_id)
        assert attempt["call_progress"] == said
    rows = await env.w.db.fetch("SELECT payload FROM outbox WHERE topic = 'duetime.deadletter'")
    events = [events_pb2.DeadLetterEvent.FromString(bytes(r["payload"])) for r in rows]
    assert sorted(e.reason for e in events) == ["OUTCOME_UNKNOWN", "OUTCOME_UNKNOWN"]


async def test_reports_say_how_far_the_call_got(at_most_once: Env) -> None:
    env = at_most_once
    cases = [
        ("refused", wpb.ATTEMPT_RESULT_FAILED, NOT_BEGUN, run_pb2.RUN_STATE_RETRY_WAIT),
        (
            "answered",
            wpb.ATTEMPT_RESULT_FAILED,
            wpb.CALL_PROGRESS_ANSWERED,
            run_pb2.RUN_STATE_RETRY_WAIT,
        ),
        ("unrun", wpb.ATTEMPT_RESULT_HANDED_BACK, NOT_BEGUN, run_pb2.RUN_STATE_QUEUED),
        ("slow", wpb.ATTEMPT_RESULT_TIMED_OUT, BEGUN, run_pb2.RUN_STATE_DEAD_LETTERED),
        ("stopped", wpb.ATTEMPT_RESULT_HANDED_BACK, BEGUN, run_pb2.RUN_STATE_DEAD_LETTERED),
        (
            "old",
            wpb.ATTEMPT_RESULT_FAILED,
            wpb.CALL_PROGRESS_UNSPECIFIED,
            run_pb2.RUN_STATE_DEAD_LETTERED,
        ),
    ]
    for request_id, result, call, state in cases:
        run_id = await env.started_run(request_id)
        report = wpb.CompleteAttemptRequest(
            run_id=str(run_id), result=result, retryable=True, worker_id="w-1", call_progress=call
        )
        answer = await env.w.stub.CompleteAttempt(report, metadata=env.w.auth(1))
        assert answer.run_state == run_pb2.RunState.Name(state), request_id
        (attempt,) = await env.w.attempts(run_id)
        assert attempt["call_progress"] == (
            None if call == 0 else wpb.CallProgress.Name(call).removeprefix("CALL_PROGRESS_")
        )
    bad = wpb.CompleteAttemptRequest(
        run_id=str(uuid.uuid4()),
        result=wpb.ATTEMPT_RESULT_FAILED,
        worker_id="w-1",
        call_progress=wpb.CallProgress.ValueType(9),
    )
    refused = await failure(env.w.stub.CompleteAttempt(bad, metadata=env.w.auth(1)))
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.fields == {"call_progress": "unknown value 9"}


async def test_at_least_once_retries_whatever_the_call_got_to(at_least_once: Env) -> None:
    env = at_least_once
    announced = await env.started_run("announced")
    await env.beat(announced, BEGUN)
    unsaid = await env.started_run("unsaid")
    assert await env.expire() == 2
    for run_id in (announced, unsaid):
        assert (await env.run(run_id)).state == run_pb2.RUN_STATE_RETRY_WAIT
