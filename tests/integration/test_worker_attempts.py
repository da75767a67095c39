"""A dispatch message handled by the worker's executor against an in-process WorkerService on
real PostgreSQL and a real HTTP target: waiting on the server's clock, refusals dropped, leases
renewed over the heartbeat stream, cancel directives obeyed, a start already sent when the
worker stops seen through and handed back unrun, and an at-most-once call announced before it is
sent, its report saying how far it got."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest

from duetime.jobs.v1 import job_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_core.attempts import AttemptSettings
from duetime_worker.attempt.executor import Executor
from duetime_worker.attempt.heartbeats import Heartbeats
from duetime_worker.attempt.scheduler_client import RPC_TIMEOUT, AttemptCalls
from duetime_worker.herd.governor import Herd
from duetime_worker.herd.knobs import PRE_CALL_BEAT
from duetime_worker.intake.dispatch import Dispatch
from duetime_worker.targets.container.launcher import DisabledLauncher
from duetime_worker.targets.http.caller import HttpCaller
from testkit.api import ApiClient, running_api
from testkit.executor import worker_machinery
from testkit.http_target import Behaviour, HttpTarget, http_target
from testkit.kafka import free_port
from testkit.polling import eventually, throughout
from testkit.worker_api import WorkerClient, create_job, job_message, running_worker_api

pytestmark = pytest.mark.timeout(60)

LEASE = timedelta(seconds=2)
CLOCK_SLACK = timedelta(milliseconds=5)


@dataclass
class Env:
    api: ApiClient
    w: WorkerClient
    target: HttpTarget
    executor: Executor
    heartbeats: Heartbeats
    http: HttpCaller
    herd: Herd


@pytest.fixture
async def env(db_dsn: str) -> AsyncIterator[Env]:
    async with (
        running_api(db_dsn) as api,
        running_worker_api(db_dsn, AttemptSettings(lease=LEASE)) as w,
        http_target() as target,
        worker_machinery(w) as machinery,
    ):
        executor = machinery.executor(DisabledLauncher())
        yield Env(api, w, target, executor, machinery.heartbeats, machinery.http, machinery.herd)


async def job_calling(env: Env, path: str, behaviour: Behaviour) -> job_pb2.Job:
    job = job_message(attempt_timeout=timedelta(seconds=20))
    job.target.http.url = env.target.on(path, behaviour)
    return await create_job(env.api, job)


class Answer:
    def __init__(self) -> None:
        self.at: float | None = None

    def __call__(self) -> None:
        assert self.at is None, "answered twice"
        self.at = time.monotonic()


async def test_waits_for_the_effective_time_by_the_server_clock(env: Env) -> None:
    job = await job_calling(env, "/hook", Behaviour())
    effective = await env.w.now() + timedelta(seconds=1.5)
    run_id = await env.w.queue_scheduled_run(job.job_id, effective)
    answered = Answer()
    await env.executor.process(Dispatch(run_id=str(run_id)), "d-1", answered)
    assert answered.at is not None
    (call,) = env.target.calls
    assert call.time >= effective - CLOCK_SLACK
    assert call.headers["Duetime-Attempt"] == "1"
    assert call.headers["Authorization"] == "Bearer s3cret"
    row = await env.w.run_row(run_id)
    assert row["state"] == "SUCCEEDED"


async def test_the_target_is_told_the_attempt_deadline(env: Env) -> None:
    job = await job_calling(env, "/deadline", Behaviour())
    run_id = await env.w.queue_scheduled_run(job.job_id, await env.w.now())
    await env.executor.process(Dispatch(run_id=str(run_id)), "d-1", Answer())
    (call,) = env.target.calls
    # The job's attempt timeout (20 s), from the call's start: the target saw the request
    # arrive just after the worker computed the deadline, on the same machine's clock.
    assert 19 < float(call.headers["Duetime-Deadline-Seconds"]) <= 20
    text = call.headers["Duetime-Deadline"]
    assert text.endswith("Z")
    deadline = datetime.fromisoformat(text)
    assert timedelta(seconds=19) < deadline - call.time <= timedelta(seconds=20)


async def test_a_refused_start_is_dropped_without_calling_the_target(env: Env) -> None:
    answered = Answer()
    await env.executor.process(Dispatch(run_id=str(uuid.uuid4())), "d-1", answered)
    assert answered.at is not None
    assert env.target.calls == []


async def test_heartbeats_keep_a_long_attempt_alive(env: Env) -> None:
    job = await job_calling(env, "/slow", Behaviour(delay=LEASE.total_seconds() * 2))
    run_id = await env.w.queue_scheduled_run(job.job_id, await env.w.now())
    processing = asyncio.create_task(
        env.executor.process(Dispatch(run_id=str(run_id)), "d-1", Answer())
    )
    await eventually(lambda: _has_attempt(env.w, run_id), 10, "attempt started")
    first = (await env.w.attempts(run_id))[0]["lease_expire_time"]
    await eventually(
        lambda: _lease_beyond(env.w, run_id, first + LEASE), 10, "lease renewed past the first"
    )
    await processing
    (attempt,) = await env.w.attempts(run_id)
    assert attempt["outcome"] == "SUCCEEDED"
    assert env.heartbeats.streams_opened == 1
    assert env.heartbeats.active == []


async def test_a_cancel_directive_stops_the_attempt(env: Env) -> None:
    job = await job_calling(env, "/stuck", Behaviour(delay=30))
    run_id = await env.w.queue_scheduled_run(job.job_id, await env.w.now())
    processing = asyncio.create_task(
        env.executor.process(Dispatch(run_id=str(run_id)), "d-1", Answer())
    )
    await eventually(lambda: len(env.target.calls) == 1, 10, "target called")
    await env.api.stub.DeleteJob(svc.DeleteJobRequest(name=job.name), metadata=env.api.auth())
    await asyncio.wait_for(processing, 10)
    (attempt,) = await env.w.attempts(run_id)
    assert attempt["outcome"] == "CANCELLED"
    assert attempt["end_time"] is not None


class AnswerHeldBack(AttemptCalls):
    """Starts whose answers are held on their way back until ``deliver`` is set."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deliver = asyncio.Event()

    async def start(
        self, request: pb.StartAttemptRequest, slack: float = 0.0
    ) -> pb.StartAttemptResponse:
        response = await super().start(request, slack)
        await self.deliver.wait()
        return response


C = TypeVar("C", bound=AttemptCalls)


def executor_with(
    env: Env, calls_kind: type[C], worker: str = "w-test", **options: Any
) -> tuple[Executor, C]:
    """An executor of ``worker`` whose start and report calls go through ``calls_kind``."""
    metadata = (("authorization", f"Bearer {env.w.token}"),)
    calls = calls_kind(env.w.stub, metadata, RPC_TIMEOUT)
    executor = Executor(
        env.w.stub,
        worker,
        metadata,
        env.heartbeats,
        env.http,
        DisabledLauncher(),
        herd=env.herd,
        calls=calls,
        **options,
    )
    return executor, calls


async def test_a_start_sent_before_the_worker_stops_is_handed_back_unrun(env: Env) -> None:
    job = await job_calling(env, "/hook", Behaviour())
    run_id = await env.w.queue_scheduled_run(job.job_id, await env.w.now())
    executor, calls = executor_with(env, AnswerHeldBack)
    answered = Answer()
    processing = asyncio.create_task(
        executor.process(Dispatch(run_id=str(run_id)), "d-1", answered)
    )
    # The scheduler started the attempt; its answer is still on its way.
    await eventually(lambda: _has_attempt(env.w, run_id), 10, "attempt started")
    executor.stop()
    processing.cancel()  # as the consumer's drain gives up every message not yet answered
    await throughout(lambda: not processing.done(), 0.1, "the start is seen through")
    calls.deliver.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(processing, 10)
    await calls.close()
    assert env.target.calls == []
    assert answered.at is None  # not committed
    (attempt,) = await env.w.attempts(run_id)
    assert attempt["outcome"] == "HANDED_BACK"
    assert attempt["end_time"] is not None
    assert (await env.w.run_row(run_id))["state"] == "QUEUED"


async def test_a_start_in_flight_when_its_partition_is_revoked_is_run_not_handed_back(
    env: Env,
) -> None:
    job = await job_calling(env, "/hook", Behaviour())
    run_id = await env.w.queue_scheduled_run(job.job_id, await env.w.now())
    executor, calls = executor_with(env, AnswerHeldBack)
    answered = Answer()
    dispatch = Dispatch(run_id=str(run_id))
    processing = asyncio.create_task(executor.process(dispatch, "d-1", answered))
    await eventually(lambda: _has_attempt(env.w, run_id), 10, "attempt started")
    processing.cancel()  # as the consumer gives up a revoked partition's unanswered messages
    # The partition's next owner gets the same message: its start is refused, so it commits
    # past the message and never calls the target.
    elsewhere, other_calls = executor_with(env, AttemptCalls, worker="w-other")
    redelivered = Answer()
    await asyncio.wait_for(elsewhere.process(dispatch, "d-1", redelivered), 10)
    await other_calls.close()
    assert redelivered.at is not None
    assert env.target.calls == []
    calls.deliver.set()
    await asyncio.wait_for(processing, 10)  # not cancelled: the attempt was run
    await calls.close()
    assert len(env.target.calls) == 1
    (attempt,) = await env.w.attempts(run_id)
    assert attempt["outcome"] == "SUCCEEDED"
    assert (await env.w.run_row(run_id))["state"] == "SUCCEEDED"


class FirstStartRepeated(AttemptCalls):
    """Answers every start with the first one's answer: a redelivery of the same message
    whose replayed answer (the same attempt) arrives after the first execution ended."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.first: pb.StartAttemptResponse | None = None

    async def start(
        self, request: pb.StartAttemptRequest, slack: float = 0.0
    ) -> pb.StartAttemptResponse:
        if self.first is None:
            self.first = await super().start(request, slack)
        return self.first


async def test_a_second_delivery_of_an_attempt_already_run_does_not_call_the_target(
    env: Env,
) -> None:
    job = await job_calling(env, "/hook", Behaviour())
    run_id = await env.w.queue_scheduled_run(job.job_id, await env.w.now())
    executor, calls = executor_with(env, FirstStartRepeated)
    dispatch = Dispatch(run_id=str(run_id))
    await asyncio.wait_for(executor.process(dispatch, "d-1", Answer()), 10)
    assert len(env.target.calls) == 1
    again = Answer()
    await asyncio.wait_for(executor.process(dispatch, "d-1", again), 10)
    await calls.close()
    assert again.at is not None  # answered: its offset may be committed
    assert len(env.target.calls) == 1
    (attempt,) = await env.w.attempts(run_id)
    assert attempt["outcome"] == "SUCCEEDED"


async def test_a_stopping_worker_starts_nothing_more(env: Env) -> None:
    job = await job_calling(env, "/hook", Behaviour())
    run_id = await env.w.queue_scheduled_run(job.job_id, await env.w.now())
    answered = Answer()
    env.executor.stop()
    await asyncio.wait_for(env.executor.process(Dispatch(run_id=str(run_id)), "d-1", answered), 5)
    assert answered.at is None
    assert await env.w.attempts(run_id) == []


async def _has_attempt(w: WorkerClient, run_id: uuid.UUID) -> bool:
    return bool(await w.attempts(run_id))


async def _lease_beyond(w: WorkerClient, run_id: uuid.UUID, when: object) -> bool:
    (attempt,) = await w.attempts(run_id)
    return bool(attempt["lease_expire_time"] > when)


def due_at(run_id: uuid.UUID, effective: datetime) -> Dispatch:
    since_epoch = effective - datetime(1970, 1, 1, tzinfo=UTC)
    return Dispatch(run_id=str(run_id), not_before=since_epoch // timedelta(microseconds=1) * 1000)


async def test_an_attempt_started_ahead_calls_at_its_time_and_reports_when(env: Env) -> None:
    job = await job_calling(env, "/ahead", Behaviour())
    effective = await env.w.now() + timedelta(seconds=2)
    run_id = await env.w.queue_scheduled_run(job.job_id, effective)
    early = Executor(
        env.w.stub,
        "w-test",
        (("authorization", f"Bearer {env.w.token}"),),
        env.heartbeats,
        env.http,
        DisabledLauncher(),
        herd=env.herd,
        early=10,
    )
    answered = Answer()
    processing = asyncio.create_task(early.process(due_at(run_id, effective), "d-1", answered))

    async def started_ahead() -> bool:
        attempts = await env.w.attempts(run_id)
        return bool(attempts) and attempts[0]["early"]

    await eventually(started_ahead, 5, "the attempt started ahead of its time", interval=0.02)
    assert await env.w.now() < effective
    assert env.target.calls == []
    await asyncio.wait_for(processing, 20)
    (call,) = env.target.calls
    assert call.time >= effective - CLOCK_SLACK
    (attempt,) = await env.w.attempts(run_id)
    assert attempt["outcome"] == "SUCCEEDED"
    assert effective <= attempt["start_time"] <= call.time + CLOCK_SLACK
    assert (await env.w.run_row(run_id))["first_start_time"] == attempt["start_time"]


class EarlySlackNoted(AttemptCalls):
    """Notes the slack each start asked ahead is given; the first is held until ``deliver``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.slacks: list[float] = []
        self.deliver = asyncio.Event()

    async def start(
        self, request: pb.StartAttemptRequest, slack: float = 0.0
    ) -> pb.StartAttemptResponse:
        if request.early:
            self.slacks.append(slack)
            if len(self.slacks) == 1:
                await self.deliver.wait()
        return await super().start(request, slack)


async def test_a_start_ahead_waits_for_company_unless_no_permit_is_left_for_company(
    env: Env,
) -> None:
    # Two start permits. The first start asked ahead leaves one free: it waits for company
    # (and is held until ``deliver``). The next takes the last: nobody can join it, so it goes
    # at once, and so does the one after, which waits for a permit and gets the last again.
    # Once they are done, a start alone with both permits free waits for company again.
    effective = await env.w.now() + timedelta(seconds=5)
    runs = [
        await env.w.queue_scheduled_run(
            (await job_calling(env, f"/c{i}", Behaviour())).job_id, effective
        )
        for i in range(4)
    ]
    executor, calls = executor_with(env, EarlySlackNoted, early=10, starting=2)
    # The first run alone: its TOO_EARLY answer sets the executor's server clock, so the
    # others ask ahead at once.
    processing = [
        asyncio.create_task(executor.process(due_at(runs[0], effective), "d-0", Answer()))
    ]
    await eventually(lambda: len(calls.slacks) == 1, 10, "the first start ahead asked")
    processing += [
        asyncio.create_task(executor.process(due_at(r, effective), f"d-{i}", Answer()))
        for i, r in enumerate(runs[1:3], 1)
    ]
    await eventually(lambda: len(calls.slacks) == 3, 10, "the next two asked")
    calls.deliver.set()
    # Their starts answered (their calls wait for their time), both permits are free.
    await eventually(lambda: executor._starting._free == 2, 10, "the permits given back")
    processing.append(
        asyncio.create_task(executor.process(due_at(runs[3], effective), "d-3", Answer()))
    )
    await asyncio.wait_for(asyncio.gather(*processing), 30)
    first, took_the_last, waited_for_it, alone = calls.slacks
    assert first > 1
    assert took_the_last == 0
    assert waited_for_it == 0
    assert alone > 1
    assert len(env.target.calls) == 4


async def test_a_job_paused_before_a_call_started_ahead_is_not_called(env: Env) -> None:
    job = await job_calling(env, "/paused", Behaviour())
    # Paused before its beat before the call, whose answer tells it.
    effective = await env.w.now() + timedelta(seconds=PRE_CALL_BEAT + 1.5)
    run_id = await env.w.queue_scheduled_run(job.job_id, effective)
    early = Executor(
        env.w.stub,
        "w-test",
        (("authorization", f"Bearer {env.w.token}"),),
        env.heartbeats,
        env.http,
        DisabledLauncher(),
        herd=env.herd,
        early=10,
    )
    processing = asyncio.create_task(early.process(due_at(run_id, effective), "d-1", Answer()))

    async def started_ahead() -> bool:
        return bool(await env.w.attempts(run_id))

    await eventually(started_ahead, 5, "the attempt started ahead of its time", interval=0.02)
    await env.api.stub.PauseJob(svc.PauseJobRequest(name=job.name), metadata=env.api.auth())
    await asyncio.wait_for(processing, 20)
    assert env.target.calls == []
    (attempt,) = await env.w.attempts(run_id)
    assert (attempt["outcome"], attempt["error"]) == ("HANDED_BACK", "not begun: JOB_PAUSED")
    # Its redelivery finds the job paused: skipped, never called.
    await early.process(due_at(run_id, effective), "d-2", Answer())
    row = await env.w.run_row(run_id)
    assert (row["state"], row["reason"]) == ("SKIPPED", "JOB_PAUSED")
    assert env.target.calls == []


async def test_an_at_most_once_call_is_announced_before_it_is_sent(env: Env) -> None:
    hold = asyncio.Event()
    message = job_message(attempt_timeout=timedelta(seconds=20))
    message.target.http.url = env.target.on("/once", Behaviour(hold=hold))
    message.delivery = job_pb2.DELIVERY_AT_MOST_ONCE
    job = await create_job(env.api, message)
    run_id = await env.w.queue_scheduled_run(job.job_id, await env.w.now())
    processing = asyncio.create_task(
        env.executor.process(Dispatch(run_id=str(run_id)), "d-1", Answer())
    )

    async def called() -> bool:
        return len(env.target.calls_to("/once")) == 1

    await eventually(called, 10, "the target called")
    # The scheduler knew the call had begun before the target saw a byte of it.
    (attempt,) = await env.w.attempts(run_id)
    assert attempt["call_progress"] == "BEGUN"
    hold.set()
    await processing
    (attempt,) = await env.w.attempts(run_id)
    assert attempt["outcome"] == "SUCCEEDED"  # a success needs no word on the call


async def test_an_at_most_once_call_refused_before_sending_is_reported_not_begun(
    env: Env,
) -> None:
    message = job_message(attempt_timeout=timedelta(seconds=20))
    message.target.http.url = f"http://127.0.0.1:{free_port()}/refused"
    message.delivery = job_pb2.DELIVERY_AT_MOST_ONCE
    job = await create_job(env.api, message)
    run_id = await env.w.queue_scheduled_run(job.job_id, await env.w.now())
    await env.executor.process(Dispatch(run_id=str(run_id)), "d-1", Answer())
    (attempt,) = await env.w.attempts(run_id)
    assert (attempt["outcome"], attempt["call_progress"]) == ("FAILED", "NOT_BEGUN")
    assert (await env.w.run_row(run_id))["state"] == "RETRY_WAIT"
