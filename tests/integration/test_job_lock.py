"""The job's lock on real PostgreSQL: starts and reports of a job are ordered among themselves
and with the API's changes to it, never with a claim advancing its schedule (migration 0016)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta

from duetime.jobs.v1 import job_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime_infra.pg.sql import q
from testkit.api import ApiClient
from testkit.environments import ApiAndWorkers
from testkit.polling import eventually
from testkit.worker_api import WorkerClient, create_job, job_message, trigger

S = timedelta(seconds=1)
STARTED = wpb.START_DECISION_STARTED
REFUSED = wpb.START_DECISION_REFUSED
SUCCEEDED = wpb.ATTEMPT_RESULT_SUCCEEDED
# Longer than any answer takes here; a start that waits for the claim's lock never answers.
ANSWER = 10.0


async def start_in_batch(w: WorkerClient, run_id: uuid.UUID) -> wpb.StartAttemptResponse:
    request = wpb.StartAttemptsRequest(
        starts=[wpb.StartAttemptRequest(run_id=str(run_id), delivery_id="d-b", worker_id="w-1")]
    )
    response: wpb.StartAttemptsResponse = await w.stub.StartAttempts(request, metadata=w.auth())
    return response.results[0].response


async def report_in_batch(w: WorkerClient, run_id: uuid.UUID) -> wpb.CompleteAttemptResponse:
    report = wpb.CompleteAttemptRequest(run_id=str(run_id), result=SUCCEEDED, worker_id="w-1")
    request = wpb.CompleteAttemptsRequest(reports=[wpb.AttemptReport(report=report, attempt=1)])
    response: wpb.CompleteAttemptsResponse = await w.stub.CompleteAttempts(
        request, metadata=w.auth()
    )
    return response.results[0].response


async def test_starts_and_reports_do_not_wait_for_a_claim_advancing_their_job(
    env: ApiAndWorkers,
) -> None:
    api, w = env
    job = await create_job(api, job_message(overlap=job_pb2.OVERLAP_POLICY_BUFFER_ONE))
    other = await create_job(api)
    batched, single = await trigger(api, job, "r1"), await trigger(api, other, "r2")
    async with w.pool.acquire() as conn, conn.transaction():
        # What a claim's transaction holds while it advances the jobs' schedules.
        await conn.execute(
            "UPDATE jobs SET next_run_time = next_run_time WHERE job_id = ANY($1::uuid[])",
            [uuid.UUID(job.job_id), uuid.UUID(other.job_id)],
        )
        started = await asyncio.wait_for(start_in_batch(w, batched), ANSWER)
        assert (started.decision, started.attempt) == (STARTED, 1)
        one = await asyncio.wait_for(w.start(single, "d-s"), ANSWER)
        assert (one.decision, one.attempt) == (STARTED, 1)
        reported = await asyncio.wait_for(report_in_batch(w, batched), ANSWER)
        assert reported.run_state == "RUN_STATE_SUCCEEDED"
        done = await asyncio.wait_for(w.complete(single, 1), ANSWER)
        assert done.run_state == "RUN_STATE_SUCCEEDED"
    assert [(await w.run_row(r))["state"] for r in (batched, single)] == ["SUCCEEDED"] * 2


async def test_a_start_waits_for_a_pause_holding_the_job_and_then_refuses(
    env: ApiAndWorkers,
) -> None:
    api, w = env
    job = await create_job(api)
    run_id = await w.queue_scheduled_run(job.job_id, await w.now() - S)
    async with w.pool.acquire() as conn:
        async with conn.transaction():
            # The API's pause: the job's row FOR UPDATE, then its new state.
            await conn.execute(
                "SELECT 1 FROM jobs WHERE job_id = $1 FOR UPDATE", uuid.UUID(job.job_id)
            )
            start = asyncio.create_task(start_in_batch(w, run_id))
            await w.waiting_for_lock("attempt_job_lock_shared")
            assert not start.done()
            await conn.execute(
                "UPDATE jobs SET state = 'PAUSED', pause_time = duetime_now() WHERE job_id = $1",
                uuid.UUID(job.job_id),
            )
        answer = await start
    assert (answer.decision, answer.refusal_reason) == (REFUSED, "RUN_SKIPPED")
    assert (await w.run_row(run_id))["reason"] == "JOB_PAUSED"
    assert await w.attempts(run_id) == []


async def test_concurrent_starts_of_a_buffered_job_start_one_run(env: ApiAndWorkers) -> None:
    api, w = env
    job = await create_job(api, job_message(overlap=job_pb2.OVERLAP_POLICY_BUFFER_ONE))
    now = await w.now()
    runs = [await w.queue_scheduled_run(job.job_id, now - (i + 1) * S) for i in range(8)]
    # Half as single starts, half as batches of one, from different workers, all at once.
    answers = await asyncio.gather(
        *(
            w.start(r, f"d-{i}", worker=f"w-{i}") if i % 2 else start_in_batch(w, r)
            for i, r in enumerate(runs)
        )
    )
    assert sorted(a.decision for a in answers) == sorted([STARTED] + [REFUSED] * 7)
    # One runs, one waits for it (the buffer holds one), the rest are skipped.
    states = sorted([(await w.run_row(r))["state"] for r in runs])
    assert states == ["RUNNING"] + ["SKIPPED"] * 6 + ["WAITING"]


async def test_a_pause_waiting_for_the_job_goes_before_the_next_start_of_it(
    env: ApiAndWorkers,
) -> None:
    api, w = env
    job = await create_job(api)
    job_id = uuid.UUID(job.job_id)
    run_id = await w.queue_scheduled_run(job.job_id, await w.now() - S)
    async with w.pool.acquire() as starting, w.pool.acquire() as claiming:
        first = starting.transaction()
        await first.start()
        # A start of another run of the job holds the job's lock; a pause waits for it.
        await starting.fetchrow(q("attempt_job_lock"), job_id)
        pause = asyncio.create_task(pause_job(api, job.name))
        await w.waiting_for_lock("job_get_for_update")
        async with claiming.transaction():
            # A claim advancing the job: it needs neither the job's lock nor to wait.
            await claiming.execute(
                "UPDATE jobs SET next_run_time = next_run_time WHERE job_id = $1", job_id
            )
            await first.commit()
            await eventually(no_advisory_waits(w), 5, "the pause holds the job's lock")
            # The next start must wait behind the pause, not slip in beside the claim.
            start = asyncio.create_task(start_in_batch(w, run_id))
            await w.waiting_for_lock("attempt_job_lock_shared")
        await pause
        answer = await start
    assert (answer.decision, answer.refusal_reason) == (REFUSED, "RUN_SKIPPED")
    assert (await w.run_row(run_id))["reason"] == "JOB_PAUSED"


def no_advisory_waits(w: WorkerClient) -> Callable[[], Awaitable[bool]]:
    async def none_waiting() -> bool:
        waiting = await w.db.fetchval(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        )
        return int(waiting) == 0

    return none_waiting


async def pause_job(api: ApiClient, name: str) -> svc.PauseJobResponse:
    response: svc.PauseJobResponse = await api.stub.PauseJob(
        svc.PauseJobRequest(name=name), metadata=api.auth()
    )
    return response


async def test_first_starts_of_a_job_that_allows_overlap_share_its_lock_and_a_report_waits(
    env: ApiAndWorkers,
) -> None:
    api, w = env
    job = await create_job(api)  # OVERLAP_POLICY_ALLOW
    now = await w.now()
    first, single, batched = [
        await w.queue_scheduled_run(job.job_id, now - (i + 1) * S) for i in range(3)
    ]
    assert (await w.start(first, "d-f")).decision == STARTED
    async with w.pool.acquire() as conn, conn.transaction():
        # Another first start of the job in flight: it holds the job's lock shared.
        await conn.fetchrow(q("attempt_job_lock_shared"), uuid.UUID(job.job_id))
        one = await asyncio.wait_for(w.start(single, "d-s"), ANSWER)
        many = await asyncio.wait_for(start_in_batch(w, batched), ANSWER)
        assert (one.decision, many.decision) == (STARTED, STARTED)
        # A report may release a WAITING run: it holds the job alone, so it waits.
        report = asyncio.create_task(w.complete(first, 1))
        await w.waiting_for_lock("attempt_job_lock")
        assert not report.done()
    assert (await report).run_state == "RUN_STATE_SUCCEEDED"
