"""StartAttempts and CompleteAttempts on real PostgreSQL: each entry is answered as its own
StartAttempt / CompleteAttempt would be, in order, whether the batch decided it or left it to a
waiting pass (a run of a job already in the batch, a paused job, a held row, a failure)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from google.protobuf import field_mask_pb2

from duetime.jobs.v1 import job_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime_core.attempts import AttemptSettings
from duetime_core.records import AttemptOutcome, RunState
from duetime_infra.pg.attempts.results import (
    CompleteResult,
    Report,
    StartAnswer,
    StartRequest,
    StartResult,
)
from duetime_infra.pg.attempts.store import AttemptStore
from duetime_infra.pg.pool import create_pool
from testkit.api import ApiClient, failure
from testkit.environments import ApiAndWorkers, api_and_workers
from testkit.polling import eventually
from testkit.worker_api import (
    WorkerClient,
    as_datetime,
    create_job,
    job_message,
    trigger,
)

S = timedelta(seconds=1)
STARTED = wpb.START_DECISION_STARTED
TOO_EARLY = wpb.START_DECISION_TOO_EARLY
REFUSED = wpb.START_DECISION_REFUSED


async def start_many(
    w: WorkerClient, starts: list[tuple[uuid.UUID | str, str]], worker: str = "w-1"
) -> list[wpb.StartAttemptsResult]:
    request = wpb.StartAttemptsRequest(
        starts=[
            wpb.StartAttemptRequest(run_id=str(r), delivery_id=d, worker_id=worker)
            for r, d in starts
        ]
    )
    response: wpb.StartAttemptsResponse = await w.stub.StartAttempts(request, metadata=w.auth())
    assert len(response.results) == len(starts)
    return list(response.results)


async def complete_many(
    w: WorkerClient,
    reports: list[tuple[uuid.UUID | str, int, wpb.AttemptResult.ValueType]],
    worker: str = "w-1",
) -> list[wpb.CompleteAttemptsResult]:
    request = wpb.CompleteAttemptsRequest(
        reports=[
            wpb.AttemptReport(
                report=wpb.CompleteAttemptRequest(
                    run_id=str(r), result=result, worker_id=worker, error="e", retryable=True
                ),
                attempt=n,
            )
            for r, n, result in reports
        ]
    )
    response: wpb.CompleteAttemptsResponse = await w.stub.CompleteAttempts(
        request, metadata=w.auth()
    )
    assert len(response.results) == len(reports)
    return list(response.results)


async def test_a_batch_of_starts_answers_each_as_one_start_would(
    env: ApiAndWorkers,
) -> None:
    api, w = env
    now = await w.now()
    jobs = [await create_job(api) for _ in range(4)]
    due = [await w.queue_scheduled_run(j.job_id, now - S) for j in jobs[:3]]
    # A second due run of the first job: decided after the batch, by a waiting pass.
    same_job = await w.queue_scheduled_run(jobs[0].job_id, now - 2 * S)
    early = await w.queue_scheduled_run(jobs[3].job_id, now + 30 * S, now + 40 * S)
    paused = await create_job(api)
    paused_run = await w.queue_scheduled_run(paused.job_id, now - S)
    await api.stub.PauseJob(svc.PauseJobRequest(name=paused.name), metadata=api.auth())
    taken = await trigger(api, await create_job(api), "r1")
    assert (await w.start(taken, "d-other", worker="w-2")).decision == STARTED

    starts: list[tuple[uuid.UUID | str, str]] = [
        *((r, f"d-{i}") for i, r in enumerate(due)),
        (same_job, "d-same"),
        (early, "d-early"),
        (paused_run, "d-paused"),
        (taken, "d-mine"),
        (uuid.uuid4(), "d-unknown"),
        ("not-a-uuid", ""),
    ]
    results = await start_many(w, starts)
    answers = [r.response for r in results[:-1]]
    for answer, run_id in zip(answers[:4], [*due, same_job], strict=True):
        assert (answer.decision, answer.attempt, answer.run.run_id) == (STARTED, 1, str(run_id))
        row = await w.run_row(run_id)
        assert (row["state"], row["attempt"]) == ("RUNNING", 1)
        (attempt,) = await w.attempts(run_id)
        assert attempt["start_time"] >= row["effective_time"]
        assert as_datetime(answer.lease_expire_time) == attempt["lease_expire_time"]
        assert attempt["deadline"] - attempt["start_time"] == timedelta(minutes=5, seconds=30)
        assert answer.run.target.http.headers["Authorization"] == "Bearer s3cret"
    too_early = answers[4]
    assert (too_early.decision, as_datetime(too_early.effective_time)) == (
        TOO_EARLY,
        now + 40 * S,
    )
    assert await w.attempts(early) == []
    assert (answers[5].decision, answers[5].refusal_reason) == (REFUSED, "RUN_SKIPPED")
    assert (await w.run_row(paused_run))["reason"] == "JOB_PAUSED"
    assert (answers[6].decision, answers[6].refusal_reason) == (REFUSED, "ALREADY_STARTED")
    assert (answers[7].decision, answers[7].refusal_reason) == (REFUSED, "RUN_NOT_FOUND")
    bad = results[-1]
    assert not bad.HasField("response")
    assert bad.error.code == "INVALID_ARGUMENT"
    assert "starts[8].run_id" in bad.error.message
    assert "starts[8].delivery_id" in bad.error.message

    # The same deliveries again: the same attempts, none burnt.
    again = await start_many(w, starts[:4])
    assert [(r.response.decision, r.response.attempt) for r in again] == [(STARTED, 1)] * 4
    assert [len(await w.attempts(r)) for r in [*due, same_job]] == [1] * 4

    empty = await failure(w.stub.StartAttempts(wpb.StartAttemptsRequest(), metadata=w.auth()))
    assert empty.fields.keys() == {"starts"}


async def test_a_run_held_by_another_transaction_is_started_once_it_is_free(
    env: ApiAndWorkers,
) -> None:
    api, w = env
    run_id = await trigger(api, await create_job(api), "r1")
    async with w.pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT 1 FROM runs WHERE run_id = $1 FOR UPDATE", run_id)
        batch = asyncio.create_task(start_many(w, [(run_id, "d-1")]))

        async def one_run_path_waits() -> bool:
            # The batch skipped the locked row; a waiting pass now waits for the lock.
            waiting = await conn.fetchval(
                "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'"
            )
            return bool(waiting)

        await eventually(one_run_path_waits, 10, "the start waits for the run's lock")
        assert not batch.done()
    (result,) = await batch
    assert (result.response.decision, result.response.attempt) == (STARTED, 1)


async def test_a_batch_of_reports_is_a_compare_and_set_per_entry(
    env: ApiAndWorkers,
) -> None:
    api, w = env
    runs = [await trigger(api, await create_job(api), f"r{i}") for i in range(4)]
    buffered = await create_job(api, job_message(overlap=job_pb2.OVERLAP_POLICY_BUFFER_ONE))
    holder, waiting = [await trigger(api, buffered, f"b{i}") for i in range(2)]
    results = await start_many(w, [(r, f"d-{i}") for i, r in enumerate([*runs, holder])])
    assert [r.response.decision for r in results] == [STARTED] * 5
    assert (await w.start(waiting, "d-w")).refusal_reason == "RUN_WAITING"

    succeeded, failed = wpb.ATTEMPT_RESULT_SUCCEEDED, wpb.ATTEMPT_RESULT_FAILED
    reports = await complete_many(
        w,
        [
            (runs[0], 1, succeeded),
            (runs[1], 1, succeeded),
            (runs[2], 1, failed),
            (runs[3], 2, succeeded),  # not the open attempt
            (holder, 1, succeeded),
            (uuid.uuid4(), 1, succeeded),
        ],
    )
    states = [r.response.run_state for r in reports[:3]]
    assert states == ["RUN_STATE_SUCCEEDED", "RUN_STATE_SUCCEEDED", "RUN_STATE_RETRY_WAIT"]
    assert reports[2].response.HasField("next_attempt_time")
    for stale in (reports[3], reports[5]):
        assert (stale.error.code, stale.error.reason) == ("ABORTED", "STALE_ATTEMPT")
    assert reports[4].response.run_state == "RUN_STATE_SUCCEEDED"
    for run_id, state, outcome in [
        (runs[0], "SUCCEEDED", "SUCCEEDED"),
        (runs[2], "RETRY_WAIT", "FAILED"),
        (runs[3], "RUNNING", None),
        (holder, "SUCCEEDED", "SUCCEEDED"),
    ]:
        assert (await w.run_row(run_id))["state"] == state
        (attempt,) = await w.attempts(run_id)
        assert attempt["outcome"] == outcome
    # The holder's success released the BUFFER_ONE run, as a single report would.
    assert (await w.run_row(waiting))["state"] == "QUEUED"
    again = await complete_many(w, [(runs[0], 1, succeeded)])
    assert again[0].error.reason == "STALE_ATTEMPT"


@pytest.mark.parametrize(
    "overlap",
    [job_pb2.OVERLAP_POLICY_BUFFER_ONE, job_pb2.OVERLAP_POLICY_CANCEL_PREVIOUS],
    ids=["buffer_one", "cancel_previous"],
)
async def test_of_two_runs_of_a_job_in_one_batch_the_earlier_starts_first(
    env: ApiAndWorkers, overlap: job_pb2.OverlapPolicy.ValueType
) -> None:
    api, w = env
    now = await w.now()
    job = await create_job(api, job_message(overlap=overlap))
    older = await w.queue_scheduled_run(job.job_id, now - 2 * S)
    newer = await w.queue_scheduled_run(job.job_id, now - S)
    # The newer run named first: request order must not decide which run of the job starts.
    first, second = await start_many(w, [(newer, "d-newer"), (older, "d-older")])
    assert (second.response.decision, second.response.attempt) == (STARTED, 1)
    assert (await w.run_row(older))["state"] == "RUNNING"
    if overlap == job_pb2.OVERLAP_POLICY_BUFFER_ONE:
        assert (first.response.decision, first.response.refusal_reason) == (
            REFUSED,
            "RUN_WAITING",
        )
        assert (await w.run_row(newer))["state"] == "WAITING"
    else:  # the newer one supersedes the older, which was started first
        assert first.response.decision == TOO_EARLY
        (attempt,) = await w.attempts(older)
        assert attempt["cancel_reason"] == "SUPERSEDED"


@pytest.fixture
async def timed_out_env(db_dsn: str) -> AsyncIterator[ApiAndWorkers]:
    """The scheduler's sessions with a short statement timeout."""
    async with api_and_workers(db_dsn, server_settings={"statement_timeout": "1000"}) as both:
        yield both


async def test_a_failed_batch_transaction_answers_every_entry_one_by_one(
    timed_out_env: ApiAndWorkers,
) -> None:
    api, w = timed_out_env
    runs = [await trigger(api, await create_job(api), f"r{i}") for i in range(3)]
    for step in ("start", "complete"):
        async with w.pool.acquire() as conn, conn.transaction():
            # Every statement that reads a run's definition (starts) or its row (reports) waits:
            # the batch's first statement times out (its transaction fails), then the waiting
            # pass waits until the commit.
            table = "job_versions" if step == "start" else "runs"
            await conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            if step == "start":
                batch: asyncio.Task[list[Any]] = asyncio.create_task(
                    start_many(w, [(r, f"d-{i}") for i, r in enumerate(runs)])
                )
            else:
                done = wpb.ATTEMPT_RESULT_SUCCEEDED
                batch = asyncio.create_task(complete_many(w, [(r, 1, done) for r in runs]))
            # The waiting pass's read of the run (after the batch's timed out).
            await w.waiting_for_lock(
                "attempt_batch_runs_lock_waiting"
                if step == "start"
                else "attempt_batch_reports_lock_waiting"
            )
        results = await batch
        if step == "start":
            assert [(r.response.decision, r.response.attempt) for r in results] == [
                (STARTED, 1)
            ] * 3
        else:
            assert [r.response.run_state for r in results] == ["RUN_STATE_SUCCEEDED"] * 3
            assert [(await w.run_row(r))["state"] for r in runs] == ["SUCCEEDED"] * 3


async def test_a_batch_starts_every_run_of_a_job_that_allows_overlap_at_once(
    env: ApiAndWorkers,
) -> None:
    api, w = env
    job = await create_job(api)  # OVERLAP_POLICY_ALLOW
    now = await w.now()
    runs = [await w.queue_scheduled_run(job.job_id, now - (i + 1) * S) for i in range(5)]
    results = await start_many(w, [(r, f"d-{i}") for i, r in enumerate(runs)])
    assert [r.response.decision for r in results] == [STARTED] * 5
    # Decided in the batch's one statement, not one by one after it.
    starts = {(await w.attempts(r))[0]["start_time"] for r in runs}
    assert len(starts) == 1


async def test_a_run_of_a_changed_overlap_policy_sees_the_allowed_run_started_before_it(
    env: ApiAndWorkers,
) -> None:
    api, w = env
    job = await create_job(api)  # OVERLAP_POLICY_ALLOW
    now = await w.now()
    allowed = await w.queue_scheduled_run(job.job_id, now - 2 * S)
    changed = job_pb2.Job(name=job.name, overlap_policy=job_pb2.OVERLAP_POLICY_SKIP)
    await api.stub.UpdateJob(
        svc.UpdateJobRequest(
            job=changed, update_mask=field_mask_pb2.FieldMask(paths=["overlap_policy"])
        ),
        metadata=api.auth(),
    )
    skipping = await w.queue_scheduled_run(job.job_id, now - S)
    results = await start_many(w, [(allowed, "d-a"), (skipping, "d-s")])
    # One by one, the later run finds the earlier one running: so too in one batch.
    assert [r.response.decision for r in results] == [STARTED, REFUSED]
    assert (await w.run_row(skipping))["state"] == "SKIPPED"


async def _statements_of_a_batch(
    api: ApiClient, w: WorkerClient, store: AttemptStore, seen: list[str], size: int
) -> tuple[list[str], list[str]]:
    """The statements a batch of ``size`` new runs' starts, then their successes, sent."""
    now = await w.now()
    runs = [
        await w.queue_scheduled_run((await create_job(api)).job_id, now - S) for _ in range(size)
    ]
    seen.clear()
    started = await store.start_many([StartRequest(r, f"d-{i}", "w-1") for i, r in enumerate(runs)])
    assert [s.answer for s in started if isinstance(s, StartResult)] == [StartAnswer.STARTED] * size
    starts = list(seen)
    seen.clear()
    done = await store.complete_many(
        [Report(r, 1, "w-1", AttemptOutcome.SUCCEEDED, False, "") for r in runs]
    )
    assert [d.run_state for d in done if isinstance(d, CompleteResult)] == [
        RunState.SUCCEEDED
    ] * size
    return starts, list(seen)


def _names(statements: list[str]) -> list[str]:
    """Each statement by its query name (``/* name */``), else its text; the pool's reset of a
    connection it takes back (sent after the answer, so seen or not yet) left out."""
    return [
        s.split("*/")[0].removeprefix("/* ").strip() if s.startswith("/*") else s
        for s in statements
        if not s.startswith("SELECT pg_advisory_unlock_all()")
    ]


async def test_a_batch_sends_as_many_statements_for_twenty_runs_as_for_one(
    env: ApiAndWorkers,
) -> None:
    api, w = env
    # One connection, every statement on it seen.
    pool = await create_pool(w.dsn, min_size=1, max_size=1)
    seen: list[str] = []
    async with pool.acquire() as conn:
        conn.add_query_logger(lambda logged: seen.append(logged.query))
    try:
        store = AttemptStore(pool, AttemptSettings())
        await _statements_of_a_batch(api, w, store, seen, 1)  # the connection's types learnt
        one = await _statements_of_a_batch(api, w, store, seen, 1)
        twenty = await _statements_of_a_batch(api, w, store, seen, 20)
    finally:
        await pool.close()
    assert [_names(s) for s in one] == [_names(s) for s in twenty]
    assert [_names(s) for s in one] == [
        [
            "BEGIN;",
            "SET LOCAL plan_cache_mode = force_generic_plan",
            "attempt_batch_runs_lock",
            "attempt_batch_jobs_lock",
            "attempt_start",
            "COMMIT;",
        ],
        [
            "BEGIN;",
            "SET LOCAL plan_cache_mode = force_generic_plan",
            "attempt_batch_reports_lock",
            "attempt_batch_jobs_lock",
            "attempt_batch_close_succeeded",
            "attempt_batch_jobs_waiting",
            "COMMIT;",
        ],
    ]


async def test_a_success_in_a_batch_records_how_far_its_call_got(env: ApiAndWorkers) -> None:
    api, w = env
    run_id = await w.queue_scheduled_run((await create_job(api)).job_id, await w.now() - S)
    assert (await w.start(run_id)).decision == STARTED
    report = wpb.CompleteAttemptRequest(
        run_id=str(run_id),
        result=wpb.ATTEMPT_RESULT_SUCCEEDED,
        worker_id="w-1",
        call_progress=wpb.CALL_PROGRESS_ANSWERED,
    )
    response: wpb.CompleteAttemptsResponse = await w.stub.CompleteAttempts(
        wpb.CompleteAttemptsRequest(reports=[wpb.AttemptReport(report=report, attempt=1)]),
        metadata=w.auth(),
    )
    assert response.results[0].response.run_state == "RUN_STATE_SUCCEEDED"
    assert [a["call_progress"] for a in await w.attempts(run_id)] == ["ANSWERED"]
