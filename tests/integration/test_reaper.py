"""The partition owner's reaper and retry requeue on real PostgreSQL: lease expiry, deadlines,
dead letters, fencing, and races with starts."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import asyncpg
import grpc
import pytest

from duetime.events.v1 import events_pb2
from duetime.jobs.v1 import job_pb2
from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime_core.backoff import backoff_bounds
from duetime_core.jobspec import RetryPolicy
from duetime_infra.pg.attempts.reaper import reap_expired_attempts
from duetime_infra.pg.dispatch.dispatcher import requeue_due_retries
from duetime_infra.pg.fencing import FencingLost, FencingToken, fence
from testkit.api import failure
from testkit.environments import ApiAndWorkers
from testkit.worker_api import (
    WorkerClient,
    create_job,
    exchange,
    job_message,
    trigger,
)

S = timedelta(seconds=1)
LEASE = timedelta(seconds=60)
STARTED = wpb.START_DECISION_STARTED


async def owner(w: WorkerClient, job: job_pb2.Job, revision: int = 1) -> list[FencingToken]:
    partition = await w.db.fetchval(
        "SELECT partition FROM jobs WHERE job_id = $1", uuid.UUID(job.job_id)
    )
    return [FencingToken(partition, 0, revision)]


async def state_of_everything(w: WorkerClient) -> tuple[list[asyncpg.Record], ...]:
    return (
        list(await w.db.fetch("SELECT * FROM runs ORDER BY run_id")),
        list(await w.db.fetch("SELECT * FROM run_attempts ORDER BY run_id, number")),
        list(await w.db.fetch("SELECT * FROM outbox ORDER BY id")),
    )


async def dead_letters(w: WorkerClient) -> list[events_pb2.DeadLetterEvent]:
    rows = await w.db.fetch("SELECT payload FROM outbox WHERE topic = 'duetime.deadletter'")
    return [events_pb2.DeadLetterEvent.FromString(bytes(r["payload"])) for r in rows]


async def test_an_expired_lease_is_closed_retried_and_a_late_report_refused(
    env: ApiAndWorkers,
) -> None:
    w, api = env.w, env.api
    job = await create_job(api)
    tokens = await owner(w, job)
    run_id = await trigger(api, job, "r1")
    assert (await w.start(run_id)).decision == STARTED

    await w.shift_clock(LEASE - S)
    assert await reap_expired_attempts(w.pool, tokens, 100) == 0  # not yet
    await w.shift_clock(2 * S)
    assert await reap_expired_attempts(w.pool, tokens, 100) == 1
    (attempt,) = await w.attempts(run_id)
    assert attempt["outcome"] == "LEASE_EXPIRED"
    assert attempt["end_time"] >= attempt["lease_expire_time"]
    row = await w.run_row(run_id)
    assert row["state"] == "RETRY_WAIT"
    low, high = backoff_bounds(RetryPolicy(3, 10 * S, 60 * S, 2.0), 1)
    assert low <= row["next_attempt_time"] - attempt["end_time"] <= high
    assert await reap_expired_attempts(w.pool, tokens, 100) == 0  # closed once

    # The frozen worker wakes up and reports: refused, and nothing changes.
    before = await state_of_everything(w)
    for result in (wpb.ATTEMPT_RESULT_SUCCEEDED, wpb.ATTEMPT_RESULT_FAILED):
        late = await failure(w.complete(run_id, 1, result))
        assert (late.code, late.reason) == (grpc.StatusCode.ABORTED, "STALE_ATTEMPT")
    assert await state_of_everything(w) == before
    stream = w.stub.Heartbeat(metadata=w.auth())
    ref = wpb.AttemptRef(run_id=str(run_id), attempt=1)
    beat = wpb.HeartbeatRequest(worker_id="w-1", attempts=[ref])
    (directive,) = (await exchange(stream, beat)).directives
    assert (directive.directive, directive.reason) == (wpb.DIRECTIVE_CANCEL, "ATTEMPT_CLOSED")
    await stream.done_writing()

    # The retry gets a higher number; the old token stays refused.
    await w.shift_clock(high + S)
    assert await requeue_due_retries(w.pool, tokens, timedelta(0), 100) == 1
    started = await w.start(run_id, "d-retry")
    assert (started.decision, started.attempt) == (STARTED, 2)
    late = await failure(w.complete(run_id, 1))
    assert late.reason == "STALE_ATTEMPT"
    assert (await w.complete(run_id, 2)).run_state == "RUN_STATE_SUCCEEDED"


async def test_heartbeats_hold_an_attempt_until_its_deadline(env: ApiAndWorkers) -> None:
    w, api = env.w, env.api
    job = await create_job(api, job_message(attempt_timeout=timedelta(minutes=2)))
    tokens = await owner(w, job)
    run_id = await trigger(api, job, "r1")
    await w.start(run_id)
    stream = w.stub.Heartbeat(metadata=w.auth())
    ref = wpb.AttemptRef(run_id=str(run_id), attempt=1)
    # 2 min timeout + 30 s grace: beats every 40 s keep it for 150 s, not past it.
    for _ in range(3):
        await w.shift_clock(40 * S)
        (directive,) = (
            await exchange(stream, wpb.HeartbeatRequest(worker_id="w-1", attempts=[ref]))
        ).directives
        assert directive.directive == wpb.DIRECTIVE_CONTINUE
        assert await reap_expired_attempts(w.pool, tokens, 100) == 0
    await w.shift_clock(31 * S)  # 151 s after the start, the lease still valid
    await exchange(stream, wpb.HeartbeatRequest(worker_id="w-1", attempts=[ref]))
    assert await reap_expired_attempts(w.pool, tokens, 100) == 1
    (attempt,) = await w.attempts(run_id)
    assert attempt["outcome"] == "TIMED_OUT"
    assert attempt["lease_expire_time"] > attempt["end_time"]
    assert (await w.run_row(run_id))["state"] == "RETRY_WAIT"
    (directive,) = (
        await exchange(stream, wpb.HeartbeatRequest(worker_id="w-1", attempts=[ref]))
    ).directives
    assert (directive.directive, directive.reason) == (wpb.DIRECTIVE_CANCEL, "ATTEMPT_CLOSED")
    await stream.done_writing()


async def test_the_last_attempt_expiring_dead_letters_the_run_and_releases_the_waiting_one(
    env: ApiAndWorkers,
) -> None:
    w, api = env.w, env.api
    job = await create_job(
        api, job_message(max_attempts=1, overlap=job_pb2.OVERLAP_POLICY_BUFFER_ONE)
    )
    tokens = await owner(w, job)
    first, second = await trigger(api, job, "r1"), await trigger(api, job, "r2")
    await w.start(first, "d-1")
    assert (await w.start(second, "d-2")).refusal_reason == "RUN_WAITING"
    await w.shift_clock(LEASE + S)
    assert await reap_expired_attempts(w.pool, tokens, 100) == 1
    row = await w.run_row(first)
    assert (row["state"], row["reason"]) == ("DEAD_LETTERED", "ATTEMPTS_EXHAUSTED")
    (event,) = await dead_letters(w)
    assert (event.run_id, event.attempt, event.reason) == (str(first), 1, "ATTEMPTS_EXHAUSTED")
    assert "lease" in event.last_error
    assert (await w.run_row(second))["state"] == "QUEUED"
    dispatches = await w.db.fetch(
        "SELECT payload FROM outbox WHERE topic LIKE 'duetime.runs.%' ORDER BY id"
    )
    last = events_pb2.RunDispatch.FromString(bytes(dispatches[-1]["payload"]))
    assert last.run_id == str(second)
    assert (await w.start(second, last.dispatch_id)).decision == STARTED


async def test_an_expired_superseded_attempt_cancels_its_run_and_frees_the_new_one(
    env: ApiAndWorkers,
) -> None:
    w, api = env.w, env.api
    job = await create_job(api, job_message(overlap=job_pb2.OVERLAP_POLICY_CANCEL_PREVIOUS))
    tokens = await owner(w, job)
    old = await trigger(api, job, "old")
    await w.start(old, "d-old")
    new = await trigger(api, job, "new")
    assert (await w.start(new, "d-new")).decision == wpb.START_DECISION_TOO_EARLY
    # The old worker is gone and never acknowledges; its lease runs out.
    await w.shift_clock(LEASE + S)
    assert await reap_expired_attempts(w.pool, tokens, 100) == 1
    row = await w.run_row(old)
    assert (row["state"], row["reason"]) == ("CANCELLED", "SUPERSEDED")  # not retried
    assert (await w.start(new, "d-new")).decision == STARTED


async def test_a_stale_fencing_token_closes_and_requeues_nothing(env: ApiAndWorkers) -> None:
    w, api = env.w, env.api
    job = await create_job(api)
    stale = await owner(w, job, revision=1)
    run_ids = [await trigger(api, job, f"r{i}") for i in range(2)]
    await w.start(run_ids[0], "d-0")
    await w.complete(run_ids[0], 1, wpb.ATTEMPT_RESULT_FAILED, error="boom")  # RETRY_WAIT
    await w.start(run_ids[1], "d-1")
    await w.shift_clock(timedelta(minutes=5))
    # A newer owner of the partition fenced in first.
    async with w.pool.acquire() as conn, conn.transaction():
        await fence(conn, [FencingToken(stale[0].partition, 0, 7)])
    before = await state_of_everything(w)
    with pytest.raises(FencingLost):
        await reap_expired_attempts(w.pool, stale, 100)
    with pytest.raises(FencingLost):
        await requeue_due_retries(w.pool, stale, timedelta(0), 100)
    assert await state_of_everything(w) == before
    # Partitions it does not own are not touched at all.
    elsewhere = [FencingToken((stale[0].partition + 1) % 1024, 0, 1)]
    assert await reap_expired_attempts(w.pool, elsewhere, 100) == 0
    assert await requeue_due_retries(w.pool, elsewhere, timedelta(0), 100) == 0
    assert await reap_expired_attempts(w.pool, [], 100) == 0
    assert await state_of_everything(w) == before
    # The new owner does the work.
    current = [FencingToken(stale[0].partition, 0, 7)]
    assert await reap_expired_attempts(w.pool, current, 100) == 1
    assert await requeue_due_retries(w.pool, current, timedelta(0), 100) == 1


async def test_reaping_and_requeueing_run_in_bounded_batches(env: ApiAndWorkers) -> None:
    w, api = env.w, env.api
    job = await create_job(api)
    tokens = await owner(w, job)
    run_ids = [await trigger(api, job, f"r{i}") for i in range(5)]
    for i, run_id in enumerate(run_ids):
        await w.start(run_id, f"d-{i}")
    await w.shift_clock(LEASE + S)
    assert [await reap_expired_attempts(w.pool, tokens, 2) for _ in range(4)] == [2, 2, 1, 0]
    await w.shift_clock(timedelta(minutes=5))
    assert [await requeue_due_retries(w.pool, tokens, timedelta(0), 2) for _ in range(4)] == [
        2,
        2,
        1,
        0,
    ]
    states = {(await w.run_row(r))["state"] for r in run_ids}
    assert states == {"QUEUED"}


async def test_starts_racing_the_reaper_never_open_two_attempts_for_a_run(
    env: ApiAndWorkers,
) -> None:
    """Rounds of: several deliveries of every run start at once, while the reaper closes
    expired attempts and the owner requeues retries."""
    w, api = env.w, env.api
    job = await create_job(
        api,
        job_message(max_attempts=50, initial_backoff=timedelta(milliseconds=100)),
    )
    tokens = await owner(w, job)
    run_ids = [await trigger(api, job, f"r{i}") for i in range(6)]

    async def deliveries(round_: int) -> list[wpb.StartAttemptResponse]:
        return list(
            await asyncio.gather(
                *(
                    w.start(run_id, f"d-{round_}-{k}", f"w-{k}")
                    for run_id in run_ids
                    for k in range(4)
                )
            )
        )

    reaped_total = 0
    for round_ in range(5):
        answers, reaped, _ = await asyncio.gather(
            deliveries(round_),
            reap_expired_attempts(w.pool, tokens, 100),
            requeue_due_retries(w.pool, tokens, timedelta(seconds=1), 100),
        )
        reaped_total += reaped
        started = [a for a in answers if a.decision == STARTED]
        assert len(started) <= len(run_ids)
        open_counts = await w.db.fetch(
            "SELECT run_id, count(*) AS n FROM run_attempts WHERE end_time IS NULL GROUP BY run_id"
        )
        assert all(r["n"] == 1 for r in open_counts)
        # A started attempt is the run's latest, and the lease of the next round expires it.
        for run_id in run_ids:
            row = await w.run_row(run_id)
            numbers = [a["number"] for a in await w.attempts(run_id)]
            assert numbers == list(range(1, row["attempt"] + 1))
            open_ = [a for a in await w.attempts(run_id) if a["end_time"] is None]
            assert (row["state"] == "RUNNING") == (len(open_) == 1)
        await w.shift_clock(LEASE + S)
    assert reaped_total >= len(run_ids)  # the reaper really raced the starts
    assert await w.db.fetchval("SELECT max(number) FROM run_attempts") >= 2
