"""Attempts started ahead of their run's time, on real PostgreSQL: who may start early, what
the attempt holds, how a pause or delete before the call still reaches it, and how the call's
reported start becomes the attempt's."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from duetime.jobs.v1 import job_pb2, run_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime_core.attempts import NEVER_CALLED, AttemptSettings
from duetime_infra.codec.timeconv import datetime_to_timestamp
from duetime_infra.pg.attempts.reaper import reap_expired_attempts
from duetime_infra.pg.fencing import FencingToken
from duetime_scheduler.maintenance import PartitionMaintenance
from testkit.environments import ApiAndWorkers, api_and_workers
from testkit.worker_api import (
    as_datetime,
    create_job,
    exchange,
    job_message,
)

S = timedelta(seconds=1)
STARTED = wpb.START_DECISION_STARTED
TOO_EARLY = wpb.START_DECISION_TOO_EARLY
REFUSED = wpb.START_DECISION_REFUSED


class Env(ApiAndWorkers):
    async def start(
        self, run_id: uuid.UUID, delivery: str = "d-1", early: bool = True, worker: str = "w-1"
    ) -> wpb.StartAttemptResponse:
        request = wpb.StartAttemptRequest(
            run_id=str(run_id), delivery_id=delivery, worker_id=worker, early=early
        )
        response: wpb.StartAttemptResponse = await self.w.stub.StartAttempt(
            request, metadata=self.w.auth()
        )
        return response

    async def start_in_batch(self, run_id: uuid.UUID) -> wpb.StartAttemptResponse:
        request = wpb.StartAttemptsRequest(
            starts=[
                wpb.StartAttemptRequest(
                    run_id=str(run_id), delivery_id="d-1", worker_id="w-1", early=True
                )
            ]
        )
        (result,) = (await self.w.stub.StartAttempts(request, metadata=self.w.auth())).results
        return result.response


@pytest.fixture
async def env(db_dsn: str) -> AsyncIterator[Env]:
    async with api_and_workers(db_dsn) as both:
        yield Env(*both)


def beat(*refs: tuple[uuid.UUID, int], worker: str = "w-1") -> wpb.HeartbeatRequest:
    return wpb.HeartbeatRequest(
        worker_id=worker, attempts=[wpb.AttemptRef(run_id=str(r), attempt=n) for r, n in refs]
    )


@pytest.mark.parametrize("batched", [False, True])
async def test_an_allow_run_due_soon_starts_ahead_with_its_lease_counted_from_its_time(
    env: Env, batched: bool
) -> None:
    w = env.w
    job = await create_job(env.api)
    now = await w.now()
    run_id = await w.queue_scheduled_run(job.job_id, now + 3 * S)
    started = await (env.start_in_batch(run_id) if batched else env.start(run_id))
    assert started.decision == STARTED
    assert as_datetime(started.call_time) == now + 3 * S
    assert as_datetime(started.server_time) < now + 3 * S  # started before its time
    (attempt,) = await w.attempts(run_id)
    assert attempt["early"]
    assert attempt["start_time"] == now + 3 * S
    # A short lease from its call time: the beat before the call renews it.
    assert attempt["lease_expire_time"] == now + 3 * S + timedelta(seconds=10)
    assert attempt["deadline"] == now + 3 * S + timedelta(minutes=5, seconds=30)
    assert as_datetime(started.lease_expire_time) == attempt["lease_expire_time"]
    assert (await w.run_row(run_id))["state"] == "RUNNING"
    # The same delivery again gets the same attempt, and its call time.
    again = await env.start(run_id)
    assert (again.decision, again.attempt, again.call_time) == (STARTED, 1, started.call_time)


@pytest.mark.parametrize("batched", [False, True])
async def test_an_attempt_started_ahead_holds_no_more_than_the_configured_lease(
    db_dsn: str, batched: bool
) -> None:
    async with api_and_workers(db_dsn, settings=AttemptSettings(lease=4 * S)) as both:
        env = Env(*both)
        job = await create_job(env.api)
        now = await env.w.now()
        run_id = await env.w.queue_scheduled_run(job.job_id, now + 3 * S)
        started = await (env.start_in_batch(run_id) if batched else env.start(run_id))
        assert started.decision == STARTED
        # The early lease (10 s) would outlast the 4 s an attempt started at its time gets.
        (attempt,) = await env.w.attempts(run_id)
        assert attempt["lease_expire_time"] == now + 3 * S + 4 * S
        assert as_datetime(started.lease_expire_time) == attempt["lease_expire_time"]


async def test_a_run_started_ahead_reads_queued_until_its_call_time(env: Env) -> None:
    w, api = env.w, env.api
    job = await create_job(api)
    now = await w.now()
    run_id = await w.queue_scheduled_run(job.job_id, now + 5 * S)
    assert (await env.start(run_id)).decision == STARTED
    assert (await w.run_row(run_id))["state"] == "RUNNING"  # in the store, for its rules

    async def shown(state: int = 0) -> list[tuple[str, int]]:
        request = svc.ListRunsRequest(parent=job.name, state=state)  # type: ignore[arg-type]
        runs = (await api.stub.ListRuns(request, metadata=api.auth())).runs
        return [(r.run_id, r.state) for r in runs]

    name = f"{job.name}/runs/{run_id}"
    got = (await api.stub.GetRun(svc.GetRunRequest(name=name), metadata=api.auth())).run
    # Its call has not begun: readers see it queued, with the attempt that calls at its time.
    assert got.state == run_pb2.RUN_STATE_QUEUED
    assert as_datetime(got.attempts[0].start_time) == now + 5 * S
    assert not got.HasField("start_lateness")  # it has not started
    assert await shown() == [(str(run_id), run_pb2.RUN_STATE_QUEUED)]
    assert await shown(run_pb2.RUN_STATE_QUEUED) == [(str(run_id), run_pb2.RUN_STATE_QUEUED)]
    assert await shown(run_pb2.RUN_STATE_RUNNING) == []
    await w.shift_clock(5 * S)
    got = (await api.stub.GetRun(svc.GetRunRequest(name=name), metadata=api.auth())).run
    assert got.state == run_pb2.RUN_STATE_RUNNING
    assert got.start_lateness.ToTimedelta() == timedelta(0)
    assert await shown(run_pb2.RUN_STATE_RUNNING) == [(str(run_id), run_pb2.RUN_STATE_RUNNING)]
    assert await shown(run_pb2.RUN_STATE_QUEUED) == []


async def test_runs_not_started_ahead_are_too_early_as_before(env: Env) -> None:
    w = env.w
    now = await w.now()
    allow = await create_job(env.api)
    skip = await create_job(env.api, job_message(overlap=job_pb2.OVERLAP_POLICY_SKIP))
    far = await w.queue_scheduled_run(allow.job_id, now + 31 * S)
    overlap = await w.queue_scheduled_run(skip.job_id, now + 2 * S)
    plain = await w.queue_scheduled_run(allow.job_id, now + 3 * S)
    assert (await env.start(far)).decision == TOO_EARLY  # more than 30 s ahead
    assert (await env.start(overlap)).decision == TOO_EARLY  # overlap decided at its time
    assert (await env.start(plain, early=False)).decision == TOO_EARLY  # not asked for
    for run_id in (far, overlap, plain):
        assert await w.attempts(run_id) == []


async def test_a_paused_job_cancels_an_attempt_started_ahead_until_its_call_begins(
    env: Env,
) -> None:
    w, api = env.w, env.api
    job = await create_job(api)
    now = await w.now()
    run_id = await w.queue_scheduled_run(job.job_id, now + 5 * S)
    assert (await env.start(run_id)).decision == STARTED
    stream = w.stub.Heartbeat(metadata=w.auth())
    (cont,) = (await exchange(stream, beat((run_id, 1)))).directives
    assert cont.directive == wpb.DIRECTIVE_CONTINUE
    # Renewed for a whole lease from the beat (never shorter than the one it had).
    renewed = as_datetime(cont.lease_expire_time)
    assert renewed >= now + timedelta(seconds=60) > now + 5 * S + timedelta(seconds=10)
    await api.stub.PauseJob(svc.PauseJobRequest(name=job.name), metadata=api.auth())
    (cancel,) = (await exchange(stream, beat((run_id, 1)))).directives
    assert (cancel.directive, cancel.reason) == (wpb.DIRECTIVE_CANCEL, "JOB_PAUSED")
    # The worker hands it back unrun; its redelivery finds the job paused.
    await w.complete(run_id, 1, wpb.ATTEMPT_RESULT_HANDED_BACK, error="not begun: JOB_PAUSED")
    assert (await w.run_row(run_id))["state"] == "QUEUED"
    await w.shift_clock(6 * S)
    refused = await env.start(run_id, delivery="d-2")
    assert (refused.decision, refused.refusal_reason) == (REFUSED, "RUN_SKIPPED")
    row = await w.run_row(run_id)
    assert (row["state"], row["reason"]) == ("SKIPPED", "JOB_PAUSED")
    stream.cancel()


async def test_a_pause_once_the_call_has_begun_does_not_stop_it(env: Env) -> None:
    w, api = env.w, env.api
    job = await create_job(api)
    now = await w.now()
    run_id = await w.queue_scheduled_run(job.job_id, now + 2 * S)
    assert (await env.start(run_id)).decision == STARTED
    await w.shift_clock(3 * S)  # its call time has passed: the call may have begun
    await api.stub.PauseJob(svc.PauseJobRequest(name=job.name), metadata=api.auth())
    stream = w.stub.Heartbeat(metadata=w.auth())
    (directive,) = (await exchange(stream, beat((run_id, 1)))).directives
    assert directive.directive == wpb.DIRECTIVE_CONTINUE
    stream.cancel()


async def test_the_reported_call_start_becomes_the_attempts_start_and_its_lateness(
    env: Env,
) -> None:
    w, api = env.w, env.api
    job = await create_job(api)
    now = await w.now()
    run_id = await w.queue_scheduled_run(job.job_id, now + 2 * S)
    assert (await env.start(run_id)).decision == STARTED
    await w.shift_clock(3 * S)
    request = wpb.CompleteAttemptRequest(
        run_id=str(run_id), result=wpb.ATTEMPT_RESULT_SUCCEEDED, worker_id="w-1"
    )
    datetime_to_timestamp(now + 2 * S + timedelta(milliseconds=40), request.call_time)
    await w.stub.CompleteAttempt(request, metadata=w.auth(1))
    (attempt,) = await w.attempts(run_id)
    assert attempt["start_time"] == now + 2 * S + timedelta(milliseconds=40)
    row = await w.run_row(run_id)
    assert (row["state"], row["first_start_time"]) == ("SUCCEEDED", attempt["start_time"])
    run = (
        await api.stub.GetRun(
            svc.GetRunRequest(name=f"{job.name}/runs/{run_id}"), metadata=api.auth()
        )
    ).run
    assert run.start_lateness.ToTimedelta() == timedelta(milliseconds=40)


async def test_a_reported_call_start_is_bounded_and_a_bad_one_is_refused_by_name(
    env: Env,
) -> None:
    w = env.w
    job = await create_job(env.api)
    now = await w.now()
    run_id = await w.queue_scheduled_run(job.job_id, now + 2 * S)
    assert (await env.start(run_id)).decision == STARTED
    bad = wpb.CompleteAttemptRequest(
        run_id=str(run_id), result=wpb.ATTEMPT_RESULT_SUCCEEDED, worker_id="w-1"
    )
    bad.call_time.seconds = -(10**12)
    with pytest.raises(Exception, match="call_time"):
        await w.stub.CompleteAttempt(bad, metadata=w.auth(1))
    # Before its call time is never its start: the start stays the time it was given.
    early = wpb.CompleteAttemptRequest(
        run_id=str(run_id), result=wpb.ATTEMPT_RESULT_SUCCEEDED, worker_id="w-1"
    )
    datetime_to_timestamp(now, early.call_time)
    await w.shift_clock(3 * S)
    await w.stub.CompleteAttempt(early, metadata=w.auth(1))
    (attempt,) = await w.attempts(run_id)
    assert attempt["start_time"] == now + 2 * S


async def test_an_attempt_whose_worker_went_before_its_call_is_given_back_not_failed(
    env: Env,
) -> None:
    w = env.w
    job = await create_job(env.api, job_message(max_attempts=1))
    now = await w.now()
    gone = await w.queue_scheduled_run(job.job_id, now + 2 * S)
    beaten = await w.queue_scheduled_run(job.job_id, now + 2 * S + timedelta(milliseconds=1))
    for run_id, worker in ((gone, "w-gone"), (beaten, "w-1")):
        started = await env.start(run_id, delivery=f"d-{run_id}", worker=worker)
        assert started.decision == STARTED
    # The lease of an attempt started ahead runs 10 s from its call time until a beat renews it.
    (attempt,) = await w.attempts(gone)
    assert attempt["lease_expire_time"] == now + 2 * S + 10 * S
    await w.shift_clock(1.5 * S)  # within 4 s of the call time: the call may begin after this
    stream = w.stub.Heartbeat(metadata=w.auth())
    await exchange(stream, beat((beaten, 1)))
    stream.cancel()
    await w.shift_clock(timedelta(minutes=2))  # both leases ran out; neither worker is back
    tokens = [FencingToken(p, 0, 1) for p in range(1024)]
    assert await reap_expired_attempts(w.pool, tokens, 100) == 2
    (handed,) = await w.attempts(gone)
    assert (handed["outcome"], handed["error"]) == ("HANDED_BACK", NEVER_CALLED)
    row = await w.run_row(gone)
    assert (row["state"], row["attempt_limit"]) == ("QUEUED", 2)  # the budget is not spent
    (expired,) = await w.attempts(beaten)
    assert expired["outcome"] == "LEASE_EXPIRED"  # its call may have begun
    assert (await w.run_row(beaten))["state"] == "DEAD_LETTERED"


async def test_a_pre_call_beat_writes_one_worker_record_not_every_attempt(env: Env) -> None:
    # A herd's pre-call beat lists every attempt its worker holds: their rows stay unwritten,
    # the worker's one record is the reaper's proof that any of their calls may have begun.
    w = env.w
    job = await create_job(env.api, job_message(max_attempts=1))
    now = await w.now()
    first = await w.queue_scheduled_run(job.job_id, now + 6 * S)
    later = await w.queue_scheduled_run(job.job_id, now + 12 * S)
    for run_id in (first, later):
        assert (await env.start(run_id, delivery=f"d-{run_id}")).decision == STARTED
    record = "SELECT beat_time FROM worker_incarnation_beats WHERE worker_id = 'w-1'"
    stream = w.stub.Heartbeat(metadata=w.auth())
    # The first beat renews their short early leases; neither call's window is open yet.
    await exchange(stream, beat((first, 1), (later, 1)))
    assert await w.pool.fetchval(record) is None
    before = {r: (await w.attempts(r))[0]["xmin"] for r in (first, later)}
    await w.shift_clock(2.5 * S)  # the first call's window opened 4 s before it
    response = await exchange(stream, beat((first, 1), (later, 1)))
    assert [d.directive for d in response.directives] == [wpb.DIRECTIVE_CONTINUE] * 2
    assert await w.pool.fetchval(record) == as_datetime(response.server_time)
    assert {r: (await w.attempts(r))[0]["xmin"] for r in (first, later)} == before
    await w.shift_clock(0.5 * S)  # the window it already covers: nothing more is written
    await exchange(stream, beat((first, 1), (later, 1)))
    assert await w.pool.fetchval(record) == as_datetime(response.server_time)
    stream.cancel()
    # The worker then went: the first call may have begun, the later one's window never opened.
    await w.shift_clock(timedelta(minutes=2))
    tokens = [FencingToken(p, 0, 1) for p in range(1024)]
    assert await reap_expired_attempts(w.pool, tokens, 100) == 2
    assert (await w.attempts(first))[0]["outcome"] == "LEASE_EXPIRED"
    assert [(a["outcome"], a["error"]) for a in await w.attempts(later)] == [
        ("HANDED_BACK", NEVER_CALLED)
    ]


async def test_a_worker_record_is_kept_while_an_open_attempt_needs_it(env: Env) -> None:
    w = env.w
    job = await create_job(env.api)
    now = await w.now()
    run_id = await w.queue_scheduled_run(job.job_id, now + 2 * S)
    assert (await env.start(run_id)).decision == STARTED
    await w.shift_clock(1.5 * S)
    stream = w.stub.Heartbeat(metadata=w.auth())
    await exchange(stream, beat((run_id, 1)))
    stream.cancel()
    maintenance = PartitionMaintenance(interval_seconds=0)
    owner = [FencingToken(0, 0, 1)]
    records = "SELECT worker_id FROM worker_incarnation_beats"
    assert await maintenance(w.pool, owner) == 1
    assert [r["worker_id"] for r in await w.pool.fetch(records)] == ["w-1"]
    await w.complete(run_id, 1)
    assert await maintenance(w.pool, owner) == 1
    assert await w.pool.fetch(records) == []
