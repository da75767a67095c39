"""WorkerService on real PostgreSQL: starting attempts, heartbeats, reports, retries, overlap."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta

import asyncpg
import grpc
import pytest

from duetime.events.v1 import events_pb2
from duetime.jobs.v1 import job_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime_core.attempts import MAX_HAND_BACKS
from duetime_core.backoff import backoff_bounds
from duetime_core.jobspec import RetryPolicy
from duetime_core.runkey import RunKey, rfc3339_utc
from duetime_infra.codec.attempt_token import ATTEMPT_METADATA_KEY
from duetime_infra.pg.dispatch.dispatcher import requeue_due_retries
from duetime_infra.pg.fencing import FencingToken
from duetime_infra.tracecontext import read_trace
from testkit.api import failure, running_api
from testkit.environments import ApiAndWorkers
from testkit.worker_api import (
    WorkerClient,
    as_datetime,
    create_job,
    exchange,
    job_message,
    running_worker_api,
    trigger,
)

S = timedelta(seconds=1)
STARTED = wpb.START_DECISION_STARTED
TOO_EARLY = wpb.START_DECISION_TOO_EARLY
REFUSED = wpb.START_DECISION_REFUSED
FAILED = wpb.ATTEMPT_RESULT_FAILED


async def tokens_for(w: WorkerClient, job: job_pb2.Job) -> list[FencingToken]:
    partition = await w.db.fetchval(
        "SELECT partition FROM jobs WHERE job_id = $1", uuid.UUID(job.job_id)
    )
    return [FencingToken(partition, 0, 1)]


async def outbox(w: WorkerClient, topic_prefix: str = "duetime.runs.") -> list[asyncpg.Record]:
    rows = await w.db.fetch(
        "SELECT topic, message_key, payload, headers FROM outbox WHERE topic LIKE $1 || '%' "
        "ORDER BY id",
        topic_prefix,
    )
    return list(rows)


async def dispatches_of(w: WorkerClient, run_id: uuid.UUID) -> list[events_pb2.RunDispatch]:
    found = []
    for row in await outbox(w):
        message = events_pb2.RunDispatch.FromString(bytes(row["payload"]))
        if message.run_id == str(run_id):
            found.append(message)
    return found


# --- starting -----------------------------------------------------------------------------------


async def test_a_start_before_the_effective_time_is_too_early_on_the_server_clock(
    env: ApiAndWorkers,
) -> None:
    w = env.w
    job = await create_job(env.api)
    now = await w.now()
    run_id = await w.queue_scheduled_run(job.job_id, now + 30 * S, now + 40 * S)

    early = await w.start(run_id)
    assert early.decision == TOO_EARLY
    assert as_datetime(early.effective_time) == now + 40 * S
    server = as_datetime(early.server_time)
    assert now <= server < now + 5 * S  # the database clock, not the worker's
    assert early.attempt == 0
    assert not early.HasField("run")
    assert await w.attempts(run_id) == []
    assert (await w.run_row(run_id))["state"] == "QUEUED"

    await w.shift_clock(41 * S)
    started = await w.start(run_id)
    assert started.decision == STARTED
    assert started.attempt == 1
    row = await w.run_row(run_id)
    spec = started.run
    assert spec.run_id == str(run_id)
    assert spec.job_id == job.job_id
    assert spec.team == env.api.team
    key = RunKey.scheduled(uuid.UUID(job.job_id), now + 30 * S)
    assert spec.idempotency_key == key.canonical() == f"{job.job_id}/{rfc3339_utc(now + 30 * S)}"
    assert as_datetime(spec.nominal_time) == now + 30 * S
    assert as_datetime(spec.effective_time) == now + 40 * S
    assert spec.target.http.headers["Authorization"] == "Bearer s3cret"  # in clear
    assert spec.attempt_timeout.ToTimedelta() == timedelta(minutes=5)
    assert spec.traceparent == read_trace(row["trace_context"], row["traceparent"], run_id) != ""
    assert (row["state"], row["attempt"], row["start_delivery_id"]) == ("RUNNING", 1, "d-1")
    assert row["first_start_time"] >= row["effective_time"]
    (attempt,) = await w.attempts(run_id)
    assert as_datetime(started.lease_expire_time) == attempt["lease_expire_time"]
    assert attempt["lease_expire_time"] - attempt["start_time"] == timedelta(seconds=60)
    assert attempt["deadline"] - attempt["start_time"] == timedelta(minutes=5, seconds=30)
    assert (attempt["worker_id"], attempt["delivery_id"], attempt["end_time"]) == (
        "w-1",
        "d-1",
        None,
    )


@pytest.mark.parametrize(
    ("result", "state"),
    [
        (wpb.ATTEMPT_RESULT_SUCCEEDED, "SUCCEEDED"),
        (FAILED, "RETRY_WAIT"),
        (wpb.ATTEMPT_RESULT_HANDED_BACK, "QUEUED"),
    ],
)
async def test_an_ended_attempt_and_its_run_keep_no_delivery_id(
    env: ApiAndWorkers, result: wpb.AttemptResult.ValueType, state: str
) -> None:
    """A delivery id serves only an attempt in flight (a repeated start, its process's hold):
    the rows of an ended one do not keep it, whichever way it ended."""
    w = env.w
    run_id = await trigger(env.api, await create_job(env.api), "r1")
    assert (await w.start(run_id, "d-1@p-1")).decision == STARTED
    assert (await w.run_row(run_id))["start_delivery_id"] == "d-1@p-1"
    assert [a["delivery_id"] for a in await w.attempts(run_id)] == ["d-1@p-1"]
    assert (await w.complete(run_id, 1, result)).run_state == f"RUN_STATE_{state}"
    row = await w.run_row(run_id)
    assert (row["state"], row["start_delivery_id"]) == (state, None)
    assert [a["delivery_id"] for a in await w.attempts(run_id)] == [""]
    if state == "QUEUED":
        # Handed back: a later start, even under the same delivery, is a new attempt, and
        # its repeat gets that attempt back.
        again = await w.start(run_id, "d-1@p-1")
        assert (again.decision, again.attempt) == (STARTED, 2)
        replayed = await w.start(run_id, "d-1@p-1")
        assert (replayed.decision, replayed.attempt) == (STARTED, 2)
        assert len(await w.attempts(run_id)) == 2


async def test_the_same_delivery_gets_the_same_attempt_and_others_are_refused(
    env: ApiAndWorkers,
) -> None:
    w = env.w
    run_id = await trigger(env.api, await create_job(env.api), "r1")
    first = await w.start(run_id, "d-1", "w-1")
    again = await w.start(run_id, "d-1", "w-1")
    assert (first.decision, again.decision) == (STARTED, STARTED)
    assert again.attempt == first.attempt == 1
    # Renewed from now (see the next test), never shortened.
    assert as_datetime(again.lease_expire_time) >= as_datetime(first.lease_expire_time)
    assert again.run == first.run
    assert len(await w.attempts(run_id)) == 1

    for delivery, worker in [("d-2", "w-1"), ("d-1", "w-2")]:
        other = await w.start(run_id, delivery, worker)
        assert (other.decision, other.refusal_reason) == (REFUSED, "ALREADY_STARTED")
    assert len(await w.attempts(run_id)) == 1
    assert (await w.run_row(run_id))["attempt"] == 1


async def start_in_batch(w: WorkerClient, run_id: uuid.UUID) -> wpb.StartAttemptResponse:
    request = wpb.StartAttemptsRequest(
        starts=[wpb.StartAttemptRequest(run_id=str(run_id), delivery_id="d-1", worker_id="w-1")]
    )
    (result,) = (await w.stub.StartAttempts(request, metadata=w.auth())).results
    return result.response


@pytest.mark.parametrize("batched", [False, True])
async def test_a_repeated_start_renews_the_lease_unless_the_attempt_is_being_cancelled(
    env: ApiAndWorkers, batched: bool
) -> None:
    # The first answer was lost, or reached the worker after retries: asked again, the worker
    # must not get its attempt back with too little lease left to run it.
    w, api = env.w, env.api
    job = await create_job(api, job_message(overlap=job_pb2.OVERLAP_POLICY_CANCEL_PREVIOUS))
    run_id = await trigger(api, job, "r1")
    first = await w.start(run_id)
    await w.shift_clock(50 * S)  # 50 s of the 60 s lease spent
    again = await (start_in_batch(w, run_id) if batched else w.start(run_id))
    after = await w.now()
    assert (again.decision, again.attempt) == (STARTED, first.attempt)
    (attempt,) = await w.attempts(run_id)
    # A full lease from the renewal, which comes between the answer's server time and now.
    assert as_datetime(again.server_time) + 60 * S <= attempt["lease_expire_time"] <= after + 60 * S
    assert as_datetime(again.lease_expire_time) == attempt["lease_expire_time"]

    # A newer run supersedes it: the attempt is told to stop, and asking again renews nothing.
    newer = await trigger(api, job, "r2")
    assert (await w.start(newer, "d-2", "w-2")).decision == TOO_EARLY
    assert (await w.attempts(run_id))[0]["cancel_reason"] == "SUPERSEDED"
    await w.shift_clock(50 * S)
    kept = await (start_in_batch(w, run_id) if batched else w.start(run_id))
    (cancelling,) = await w.attempts(run_id)
    assert cancelling["lease_expire_time"] == attempt["lease_expire_time"]
    assert as_datetime(kept.lease_expire_time) == attempt["lease_expire_time"]


async def test_concurrent_deliveries_start_exactly_one_attempt(env: ApiAndWorkers) -> None:
    w = env.w
    run_id = await trigger(env.api, await create_job(env.api), "r1")
    answers = await asyncio.gather(*(w.start(run_id, f"d-{i}", f"w-{i}") for i in range(12)))
    assert sorted(a.decision for a in answers) == [STARTED] + [REFUSED] * 11
    assert {a.refusal_reason for a in answers if a.decision == REFUSED} == {"ALREADY_STARTED"}
    attempts = await w.attempts(run_id)
    assert len(attempts) == 1
    assert attempts[0]["end_time"] is None


async def test_unknown_runs_are_refused_and_bad_requests_name_their_fields(
    env: ApiAndWorkers,
) -> None:
    w = env.w
    gone = await w.start(uuid.uuid4())
    assert (gone.decision, gone.refusal_reason) == (REFUSED, "RUN_NOT_FOUND")
    assert gone.HasField("server_time")

    bad = await failure(
        w.stub.StartAttempt(
            wpb.StartAttemptRequest(run_id="not-a-uuid", worker_id="w" * 201),
            metadata=w.auth(),
        )
    )
    assert bad.code == grpc.StatusCode.INVALID_ARGUMENT
    assert set(bad.fields) == {"run_id", "delivery_id", "worker_id"}

    anonymous = await failure(w.stub.StartAttempt(wpb.StartAttemptRequest(run_id="x")))
    assert anonymous.code == grpc.StatusCode.UNAUTHENTICATED
    team = await failure(
        w.stub.StartAttempt(
            wpb.StartAttemptRequest(run_id=str(uuid.uuid4()), delivery_id="d", worker_id="w"),
            metadata=env.api.auth(),
        )
    )
    assert (team.code, team.reason) == (grpc.StatusCode.PERMISSION_DENIED, "WRONG_TOKEN_ROLE")


async def test_a_job_paused_after_its_run_was_queued_does_not_run_it(env: ApiAndWorkers) -> None:
    w = env.w
    job = await create_job(env.api)
    now = await w.now()
    scheduled = await w.queue_scheduled_run(job.job_id, now - S)
    triggered = await trigger(env.api, job, "manual")
    await env.api.stub.PauseJob(svc.PauseJobRequest(name=job.name), metadata=env.api.auth())

    refused = await w.start(scheduled)
    assert (refused.decision, refused.refusal_reason) == (REFUSED, "RUN_SKIPPED")
    row = await w.run_row(scheduled)
    assert (row["state"], row["reason"], row["attempt"]) == ("SKIPPED", "JOB_PAUSED", 0)
    assert await w.attempts(scheduled) == []
    # A trigger is an explicit request: it still runs on a paused job.
    assert (await w.start(triggered)).decision == STARTED


async def test_a_deleted_job_cancels_its_queued_run(env: ApiAndWorkers) -> None:
    w = env.w
    job = await create_job(env.api)
    run_id = await trigger(env.api, job, "r1")
    await env.api.stub.DeleteJob(svc.DeleteJobRequest(name=job.name), metadata=env.api.auth())
    refused = await w.start(run_id)
    assert (refused.decision, refused.refusal_reason) == (REFUSED, "RUN_CANCELLED")
    row = await w.run_row(run_id)
    assert (row["state"], row["reason"]) == ("CANCELLED", "JOB_DELETED")
    assert await w.attempts(run_id) == []
    again = await w.start(run_id)
    assert (again.decision, again.refusal_reason) == (REFUSED, "RUN_CANCELLED")


@pytest.mark.parametrize(
    ("policy", "older", "newer"),
    [
        (job_pb2.MISFIRE_POLICY_RUN_ONCE, "MISSED", "RUNNING"),
        (job_pb2.MISFIRE_POLICY_SKIP, "MISSED", "MISSED"),
        (job_pb2.MISFIRE_POLICY_RUN_ALL, "RUNNING", "RUNNING"),
    ],
)
async def test_misfire_at_start(
    env: ApiAndWorkers, policy: job_pb2.MisfirePolicy.ValueType, older: str, newer: str
) -> None:
    """Two occurrences delivered late (past the 60 s threshold), as after a Kafka outage."""
    w = env.w
    job = await create_job(env.api, job_message(misfire=policy))
    now = await w.now()
    first = await w.queue_scheduled_run(job.job_id, now - 180 * S)
    second = await w.queue_scheduled_run(job.job_id, now - 120 * S)
    answers = [await w.start(first, "d-1"), await w.start(second, "d-2")]
    states = [(await w.run_row(r))["state"] for r in (first, second)]
    assert states == [older, newer]
    for run_id, answer, state in zip((first, second), answers, states, strict=True):
        row = await w.run_row(run_id)
        if state == "MISSED":
            assert (answer.decision, answer.refusal_reason) == (REFUSED, "RUN_MISSED")
            assert (row["reason"], row["attempt"]) == ("MISFIRE", 0)
            assert await w.attempts(run_id) == []
        else:
            assert answer.decision == STARTED
            assert row["first_start_time"] - row["effective_time"] > timedelta(seconds=60)


async def test_a_run_within_the_threshold_is_not_a_misfire(env: ApiAndWorkers) -> None:
    w = env.w
    job = await create_job(env.api, job_message(misfire=job_pb2.MISFIRE_POLICY_SKIP))
    now = await w.now()
    run_id = await w.queue_scheduled_run(job.job_id, now - 30 * S)
    assert (await w.start(run_id)).decision == STARTED


# --- reports ------------------------------------------------------------------------------------


async def test_success(env: ApiAndWorkers) -> None:
    w = env.w
    run_id = await trigger(env.api, await create_job(env.api), "r1")
    started = await w.start(run_id)
    done = await w.complete(run_id, started.attempt)
    assert done.run_state == "RUN_STATE_SUCCEEDED"
    assert not done.HasField("next_attempt_time")
    row = await w.run_row(run_id)
    assert (row["state"], row["attempt"]) == ("SUCCEEDED", 1)
    (attempt,) = await w.attempts(run_id)
    assert (attempt["outcome"], attempt["error"]) == ("SUCCEEDED", "")
    assert attempt["end_time"] is not None
    assert await outbox(w, "duetime.deadletter") == []
    again = await w.start(run_id, "d-2")
    assert (again.decision, again.refusal_reason) == (REFUSED, "RUN_FINISHED")


async def test_fail_twice_then_succeed_with_bounded_backoff(env: ApiAndWorkers) -> None:
    w, api = env.w, env.api
    job = await create_job(api)
    run_id = await trigger(api, job, "r1")
    tokens = await tokens_for(w, job)
    policy = RetryPolicy(3, 10 * S, 60 * S, 2.0)
    delivery = "d-0"
    for attempt in (1, 2):
        started = await w.start(run_id, delivery)
        assert (started.decision, started.attempt) == (STARTED, attempt)
        report = await w.complete(run_id, attempt, FAILED, error=f"HTTP 503 #{attempt}")
        assert report.run_state == "RUN_STATE_RETRY_WAIT"
        row = await w.run_row(run_id)
        end = (await w.attempts(run_id))[-1]["end_time"]
        assert row["next_attempt_time"] == as_datetime(report.next_attempt_time)
        low, high = backoff_bounds(policy, attempt)
        assert low <= row["next_attempt_time"] - end <= high
        assert (row["state"], row["reason_detail"]) == ("RETRY_WAIT", f"HTTP 503 #{attempt}")

        # Not due yet: the owner does not requeue it; the old delivery is refused meanwhile.
        assert await requeue_due_retries(w.pool, tokens, timedelta(0), 100) == 0
        stale = await w.start(run_id, delivery)
        assert (stale.decision, stale.refusal_reason) == (REFUSED, "RUN_RETRY_WAIT")
        # Requeued within the look-ahead, with a new dispatch; still not started early.
        assert await requeue_due_retries(w.pool, tokens, high + S, 100) == 1
        assert (await w.run_row(run_id))["state"] == "QUEUED"
        dispatches = await dispatches_of(w, run_id)
        assert len(dispatches) == attempt + 1
        delivery = dispatches[-1].dispatch_id
        early = await w.start(run_id, delivery)
        assert early.decision == TOO_EARLY
        assert as_datetime(early.effective_time) == row["next_attempt_time"]
        await w.shift_clock(high + S)

    started = await w.start(run_id, delivery)
    assert (started.decision, started.attempt) == (STARTED, 3)
    assert (await w.complete(run_id, 3)).run_state == "RUN_STATE_SUCCEEDED"
    attempts = await w.attempts(run_id)
    assert [(a["number"], a["outcome"]) for a in attempts] == [
        (1, "FAILED"),
        (2, "FAILED"),
        (3, "SUCCEEDED"),
    ]
    assert attempts[0]["error"] == "HTTP 503 #1"
    row = await w.run_row(run_id)
    assert (row["state"], row["next_attempt_time"]) == ("SUCCEEDED", None)


async def fail_until_dead(w: WorkerClient, run_id: uuid.UUID, tokens: list[FencingToken]) -> int:
    """Fails every attempt (shifting the clock past each backoff); the last attempt number."""
    delivery = f"first-{run_id}"
    while True:
        started = await w.start(run_id, delivery)
        assert started.decision == STARTED, started
        report = await w.complete(run_id, started.attempt, FAILED, error="HTTP 502")
        if report.run_state != "RUN_STATE_RETRY_WAIT":
            assert report.run_state == "RUN_STATE_DEAD_LETTERED"
            return started.attempt
        await w.shift_clock(timedelta(minutes=2))
        assert await requeue_due_retries(w.pool, tokens, timedelta(0), 100) == 1
        delivery = (await dispatches_of(w, run_id))[-1].dispatch_id


async def test_always_failing_is_dead_lettered_once_then_redriven_with_rising_numbers(
    env: ApiAndWorkers,
) -> None:
    w, api = env.w, env.api
    job = await create_job(api)
    run_id = await trigger(api, job, "r1")
    tokens = await tokens_for(w, job)
    assert await fail_until_dead(w, run_id, tokens) == 3
    row = await w.run_row(run_id)
    assert (row["state"], row["reason"], row["attempt"]) == (
        "DEAD_LETTERED",
        "ATTEMPTS_EXHAUSTED",
        3,
    )
    (dead,) = await outbox(w, "duetime.deadletter")
    assert dead["message_key"] == job.job_id.encode()
    assert json.loads(str(dead["headers"]))["traceparent"] == read_trace(
        row["trace_context"], row["traceparent"], run_id
    )
    event = events_pb2.DeadLetterEvent.FromString(bytes(dead["payload"]))
    assert (event.run_id, event.job_id, event.team, event.job_name) == (
        str(run_id),
        job.job_id,
        api.team,
        job.name,
    )
    assert (event.attempt, event.reason, event.last_error) == (3, "ATTEMPTS_EXHAUSTED", "HTTP 502")
    assert event.idempotency_key == f"{job.job_id}/trigger/r1"
    assert as_datetime(event.dead_letter_time) == (await w.attempts(run_id))[-1]["end_time"]
    assert event.notification_url == ""  # the team has none: nobody is notified

    # The team's notification target is read when the run is dead-lettered.
    hook = "https://hooks.example/team-a?secret=s"
    await w.pool.execute(
        "UPDATE teams SET notification_url = $2 WHERE team_id = $1", api.team, hook
    )

    # RedriveRun: a fresh budget; attempt numbers keep rising from 3.
    run_name = f"{job.name}/runs/{run_id}"
    await api.stub.RedriveRun(
        svc.RedriveRunRequest(name=run_name, request_id="redrive-1"), metadata=api.auth()
    )
    delivery = (await dispatches_of(w, run_id))[-1].dispatch_id
    started = await w.start(run_id, delivery)
    assert (started.decision, started.attempt) == (STARTED, 4)
    report = await w.complete(run_id, 4, FAILED, error="HTTP 502")
    assert report.run_state == "RUN_STATE_RETRY_WAIT"
    # The fresh budget's backoff starts small again.
    low, high = backoff_bounds(RetryPolicy(3, 10 * S, 60 * S, 2.0), 1)
    end = (await w.attempts(run_id))[-1]["end_time"]
    assert low <= as_datetime(report.next_attempt_time) - end <= high
    await w.shift_clock(timedelta(minutes=2))
    assert await requeue_due_retries(w.pool, tokens, timedelta(0), 100) == 1
    assert await fail_until_dead(w, run_id, tokens) == 6
    assert [a["number"] for a in await w.attempts(run_id)] == [1, 2, 3, 4, 5, 6]
    dead_letters = await outbox(w, "duetime.deadletter")
    assert len(dead_letters) == 2  # one per dead-lettering
    events = [events_pb2.DeadLetterEvent.FromString(bytes(d["payload"])) for d in dead_letters]
    assert sorted((e.attempt, e.notification_url) for e in events) == [(3, ""), (6, hook)]


async def test_a_non_retryable_failure_is_dead_lettered_at_once(env: ApiAndWorkers) -> None:
    w = env.w
    run_id = await trigger(env.api, await create_job(env.api), "r1")
    await w.start(run_id)
    report = await w.complete(run_id, 1, FAILED, error="HTTP 400 " + "x" * 5000, retryable=False)
    assert report.run_state == "RUN_STATE_DEAD_LETTERED"
    row = await w.run_row(run_id)
    assert (row["state"], row["reason"]) == ("DEAD_LETTERED", "NON_RETRYABLE")
    (attempt,) = await w.attempts(run_id)
    assert len(attempt["error"].encode()) == 4096
    assert attempt["error"].startswith("HTTP 400 ")
    (dead,) = await outbox(w, "duetime.deadletter")
    event = events_pb2.DeadLetterEvent.FromString(bytes(dead["payload"]))
    assert (event.reason, event.attempt) == ("NON_RETRYABLE", 1)


async def test_reports_are_a_compare_and_set_on_the_fencing_token(env: ApiAndWorkers) -> None:
    w = env.w
    run_id = await trigger(env.api, await create_job(env.api), "r1")
    await w.start(run_id)
    before = (await w.run_row(run_id), await w.attempts(run_id))
    for attempt, worker in [(2, "w-1"), (1, "w-other")]:
        stale = await failure(w.complete(run_id, attempt, worker=worker))
        assert (stale.code, stale.reason) == (grpc.StatusCode.ABORTED, "STALE_ATTEMPT")
    unknown = await failure(w.complete(uuid.uuid4(), 1))
    assert (unknown.code, unknown.reason) == (grpc.StatusCode.ABORTED, "STALE_ATTEMPT")
    assert (await w.run_row(run_id), await w.attempts(run_id)) == before

    request = wpb.CompleteAttemptRequest(run_id=str(run_id), worker_id="w-1")
    for metadata, fields in [
        ((("authorization", f"Bearer {w.token}"),), {ATTEMPT_METADATA_KEY, "result"}),
        (w.auth("one"), {ATTEMPT_METADATA_KEY, "result"}),
        (w.auth(0), {ATTEMPT_METADATA_KEY, "result"}),
    ]:
        bad = await failure(w.stub.CompleteAttempt(request, metadata=metadata))
        assert bad.code == grpc.StatusCode.INVALID_ARGUMENT
        assert set(bad.fields) == fields
    unknown_result = wpb.CompleteAttemptRequest(
        run_id="x", worker_id="", result=wpb.AttemptResult.ValueType(99)
    )
    bad = await failure(w.stub.CompleteAttempt(unknown_result, metadata=w.auth(1)))
    assert set(bad.fields) == {"run_id", "worker_id", "result"}
    assert "unknown" in bad.fields["result"]
    assert (await w.run_row(run_id), await w.attempts(run_id)) == before
    assert (await w.complete(run_id, 1)).run_state == "RUN_STATE_SUCCEEDED"
    late = await failure(w.complete(run_id, 1))
    assert (late.code, late.reason) == (grpc.StatusCode.ABORTED, "STALE_ATTEMPT")


async def test_a_hand_back_requeues_the_run_without_spending_its_budget(env: ApiAndWorkers) -> None:
    w = env.w
    run_id = await trigger(env.api, await create_job(env.api, job_message(max_attempts=1)), "r1")
    started = await w.start(run_id, "d-1", worker="w-1")
    back = await w.complete(
        run_id, started.attempt, wpb.ATTEMPT_RESULT_HANDED_BACK, error="shutting down"
    )
    assert (back.run_state, back.HasField("next_attempt_time")) == ("RUN_STATE_QUEUED", True)
    row = await w.run_row(run_id)
    assert (row["state"], row["attempt"], row["attempt_limit"]) == ("QUEUED", 1, 2)
    (attempt,) = await w.attempts(run_id)
    assert (attempt["outcome"], attempt["error"]) == ("HANDED_BACK", "shutting down")
    # Dispatched again at once, and startable at once by another worker with a higher number.
    assert len(await dispatches_of(w, run_id)) == 2
    again = await w.start(run_id, "d-2", worker="w-2")
    assert (again.decision, again.attempt) == (STARTED, 2)
    # The budget of one attempt is still whole: a failure now is the one that spends it.
    report = await w.complete(run_id, 2, FAILED, error="HTTP 503", worker="w-2")
    assert report.run_state == "RUN_STATE_DEAD_LETTERED"
    assert (await w.run_row(run_id))["reason"] == "ATTEMPTS_EXHAUSTED"


async def test_a_run_handed_back_again_and_again_spends_its_budget_and_dead_letters(
    env: ApiAndWorkers,
) -> None:
    # A target that gets its worker evicted every time: each attempt ends HANDED_BACK.
    w = env.w
    job = await create_job(env.api, job_message(max_attempts=2))
    run_id = await trigger(env.api, job, "r1")
    for number in range(1, MAX_HAND_BACKS + 1):  # the first three are free
        assert (await w.start(run_id, f"d-{number}", worker=f"w-{number}")).attempt == number
        back = await w.complete(
            run_id, number, wpb.ATTEMPT_RESULT_HANDED_BACK, error="evicted", worker=f"w-{number}"
        )
        assert back.run_state == "RUN_STATE_QUEUED"
    row = await w.run_row(run_id)
    assert (row["state"], row["attempt"], row["attempt_limit"]) == ("QUEUED", 3, 5)
    # The fourth spends the budget: retried after a backoff, not queued again at once.
    assert (await w.start(run_id, "d-4", worker="w-4")).attempt == 4
    back = await w.complete(
        run_id, 4, wpb.ATTEMPT_RESULT_HANDED_BACK, error="evicted", worker="w-4"
    )
    assert back.run_state == "RUN_STATE_RETRY_WAIT"
    row = await w.run_row(run_id)
    assert (row["state"], row["attempt_limit"]) == ("RETRY_WAIT", 5)
    assert row["reason_detail"] == (
        "handed back 4 times (more than 3 are counted as failures): evicted"
    )
    assert len(await dispatches_of(w, run_id)) == 1 + MAX_HAND_BACKS  # no dispatch at once
    # The fifth is the budget's last attempt: dead-lettered, saying why, and the team alerted.
    await w.shift_clock(timedelta(minutes=5))
    assert await requeue_due_retries(w.pool, await tokens_for(w, job), timedelta(0), 100) == 1
    assert (await w.start(run_id, "d-5", worker="w-5")).attempt == 5
    back = await w.complete(
        run_id, 5, wpb.ATTEMPT_RESULT_HANDED_BACK, error="evicted", worker="w-5"
    )
    assert back.run_state == "RUN_STATE_DEAD_LETTERED"
    row = await w.run_row(run_id)
    assert (row["state"], row["reason"]) == ("DEAD_LETTERED", "ATTEMPTS_EXHAUSTED")
    assert row["reason_detail"].startswith("handed back 5 times (more than 3")
    assert [a["outcome"] for a in await w.attempts(run_id)] == ["HANDED_BACK"] * 5
    assert len(await outbox(w, "duetime.deadletter")) == 1


async def test_a_redriven_run_gets_its_free_hand_backs_again(env: ApiAndWorkers) -> None:
    w = env.w
    job = await create_job(env.api, job_message(max_attempts=1))
    run_id = await trigger(env.api, job, "r1")
    # Handed back until the hand-backs are counted, which spends the one attempt.
    for number in range(1, MAX_HAND_BACKS + 2):
        assert (await w.start(run_id, f"d-{number}", worker=f"w-{number}")).attempt == number
        await w.complete(run_id, number, wpb.ATTEMPT_RESULT_HANDED_BACK, worker=f"w-{number}")
    assert (await w.run_row(run_id))["state"] == "DEAD_LETTERED"
    redrive = svc.RedriveRunRequest(name=f"{job.name}/runs/{run_id}", request_id="redrive-1")
    await env.api.stub.RedriveRun(redrive, metadata=env.api.auth())
    # The fresh budget's first hand-back is free again: the earlier ones are not counted.
    number = MAX_HAND_BACKS + 2
    assert (await w.start(run_id, "d-after", worker="w-after")).attempt == number
    back = await w.complete(run_id, number, wpb.ATTEMPT_RESULT_HANDED_BACK, worker="w-after")
    assert back.run_state == "RUN_STATE_QUEUED"
    row = await w.run_row(run_id)
    assert (row["state"], row["budget_start_attempt"]) == ("QUEUED", MAX_HAND_BACKS + 1)
    # And the budget of one attempt is whole: a failure now spends it.
    assert (await w.start(run_id, "d-last", worker="w-last")).attempt == number + 1
    report = await w.complete(run_id, number + 1, FAILED, worker="w-last")
    assert report.run_state == "RUN_STATE_DEAD_LETTERED"


async def test_re_dispatches_carry_the_runs_target_kind_and_that_it_starts_at_its_time(
    env: ApiAndWorkers,
) -> None:
    w, api = env.w, env.api
    message = job_message(overlap=job_pb2.OVERLAP_POLICY_BUFFER_ONE)
    message.target.container.CopyFrom(job_pb2.ContainerTarget(image="unused:1", command=["true"]))
    job = await create_job(api, message)
    first, second = [await trigger(api, job, f"r{i}") for i in range(2)]
    assert (await w.start(first, "d-1")).decision == STARTED
    assert (await w.start(second, "d-2")).refusal_reason == "RUN_WAITING"
    # A retry, queued again by the reaper's pass.
    await w.complete(first, 1, FAILED, error="boom")
    await w.shift_clock(timedelta(minutes=2))
    assert await requeue_due_retries(w.pool, await tokens_for(w, job), timedelta(0), 10) == 1
    # A hand-back.
    retry = (await dispatches_of(w, first))[-1].dispatch_id
    assert (await w.start(first, retry)).attempt == 2
    await w.complete(first, 2, wpb.ATTEMPT_RESULT_HANDED_BACK)
    # The BUFFER_ONE release once the first run is over.
    handed_back = (await dispatches_of(w, first))[-1].dispatch_id
    assert (await w.start(first, handed_back)).attempt == 3
    assert (await w.complete(first, 3)).run_state == "RUN_STATE_SUCCEEDED"
    assert (await w.run_row(second))["state"] == "QUEUED"
    said = [(d.target_kind, d.starts_at_its_time) for d in await dispatches_of(w, first)]
    said += [(d.target_kind, d.starts_at_its_time) for d in await dispatches_of(w, second)]
    # Trigger, retry, hand-back; trigger, release: BUFFER_ONE's runs are never started ahead.
    assert said == [(events_pb2.TARGET_KIND_CONTAINER, True)] * 5


async def test_only_runs_that_start_at_their_time_are_dispatched_saying_so(
    env: ApiAndWorkers,
) -> None:
    w, api = env.w, env.api
    said: dict[int, list[bool]] = {}
    for overlap in (job_pb2.OVERLAP_POLICY_ALLOW, job_pb2.OVERLAP_POLICY_SKIP):
        job = await create_job(api, job_message(overlap=overlap, max_attempts=1))
        run_id = await trigger(api, job, f"r-{overlap}")
        # A hand-back, then a failure that dead-letters the run, then its redrive.
        assert (await w.start(run_id, "d-1")).decision == STARTED
        await w.complete(run_id, 1, wpb.ATTEMPT_RESULT_HANDED_BACK)
        assert (await w.start(run_id, "d-2")).attempt == 2
        assert (await w.complete(run_id, 2, FAILED)).run_state == "RUN_STATE_DEAD_LETTERED"
        redrive = svc.RedriveRunRequest(
            name=f"{job.name}/runs/{run_id}", request_id=f"rd-{overlap}"
        )
        await api.stub.RedriveRun(redrive, metadata=api.auth())
        said[overlap] = [d.starts_at_its_time for d in await dispatches_of(w, run_id)]
    # Trigger, hand-back, redrive.
    assert said == {
        job_pb2.OVERLAP_POLICY_ALLOW: [False] * 3,
        job_pb2.OVERLAP_POLICY_SKIP: [True] * 3,
    }


async def test_a_hand_back_of_a_cancelled_attempt_stays_cancelled(env: ApiAndWorkers) -> None:
    w, api = env.w, env.api
    job = await create_job(api)
    run_id = await trigger(api, job, "r1")
    await w.start(run_id)
    await api.stub.DeleteJob(svc.DeleteJobRequest(name=job.name), metadata=api.auth())
    back = await w.complete(run_id, 1, wpb.ATTEMPT_RESULT_HANDED_BACK)
    assert back.run_state == "RUN_STATE_CANCELLED"
    row = await w.run_row(run_id)
    assert (row["state"], row["reason"], row["attempt_limit"]) == ("CANCELLED", "JOB_DELETED", 3)
    assert len(await dispatches_of(w, run_id)) == 1


# --- heartbeats ---------------------------------------------------------------------------------


def beat(worker: str, *refs: tuple[uuid.UUID, int]) -> wpb.HeartbeatRequest:
    return wpb.HeartbeatRequest(
        worker_id=worker,
        attempts=[wpb.AttemptRef(run_id=str(r), attempt=n) for r, n in refs],
    )


async def test_heartbeats_extend_leases_and_cancel_what_is_not_open(env: ApiAndWorkers) -> None:
    w, api = env.w, env.api
    job = await create_job(api)
    a, b, c = [await trigger(api, job, f"r{i}") for i in range(3)]
    for run_id in (a, b):
        assert (await w.start(run_id, f"d-{run_id}")).decision == STARTED
    assert (await w.start(c, "d-c", "w-2")).decision == STARTED
    lease_a = (await w.attempts(a))[0]["lease_expire_time"]

    stream = w.stub.Heartbeat(metadata=w.auth())
    await w.shift_clock(30 * S)
    # a: renewed; b: a stale token (attempt 2 does not exist); c: another worker's attempt.
    response = await exchange(stream, beat("w-1", (a, 1), (b, 2), (c, 1)))
    server = as_datetime(response.server_time)
    cont, stale, foreign = response.directives
    assert (cont.directive, cont.attempt.run_id, cont.attempt.attempt) == (
        wpb.DIRECTIVE_CONTINUE,
        str(a),
        1,
    )
    renewed = (await w.attempts(a))[0]["lease_expire_time"]
    assert renewed > lease_a + 29 * S
    assert as_datetime(cont.lease_expire_time) == renewed
    assert renewed - server <= timedelta(seconds=60)
    assert (stale.directive, stale.reason) == (wpb.DIRECTIVE_CANCEL, "ATTEMPT_CLOSED")
    assert (foreign.directive, foreign.reason) == (wpb.DIRECTIVE_CANCEL, "ATTEMPT_CLOSED")
    # b, which the worker did not list correctly, and c were not renewed.
    assert (await w.attempts(b))[0]["lease_expire_time"] < renewed - 29 * S
    assert (await w.attempts(c))[0]["lease_expire_time"] < renewed - 29 * S

    # A closed attempt is told so; the job being deleted cancels the open ones.
    await w.complete(b, 1)
    await api.stub.DeleteJob(svc.DeleteJobRequest(name=job.name), metadata=api.auth())
    response = await exchange(stream, beat("w-1", (a, 1), (b, 1)))
    assert [(d.directive, d.reason) for d in response.directives] == [
        (wpb.DIRECTIVE_CANCEL, "JOB_DELETED"),
        (wpb.DIRECTIVE_CANCEL, "ATTEMPT_CLOSED"),
    ]
    assert (await w.attempts(a))[0]["lease_expire_time"] == renewed  # not renewed
    assert list((await exchange(stream, beat("w-1"))).directives) == []
    await stream.done_writing()
    assert await stream.read() == grpc.aio.EOF

    report = await w.complete(a, 1, wpb.ATTEMPT_RESULT_CANCELLED)
    assert report.run_state == "RUN_STATE_CANCELLED"
    row = await w.run_row(a)
    assert (row["state"], row["reason"]) == ("CANCELLED", "JOB_DELETED")


async def test_a_beat_writes_a_lease_only_once_a_third_of_it_is_spent(env: ApiAndWorkers) -> None:
    # A herd's beats each list every attempt the worker holds: a lease with more than two
    # thirds left is answered as it stands, and its row is neither written nor locked.
    w, api = env.w, env.api
    run_id = await trigger(api, await create_job(api), "r1")
    await w.start(run_id)
    (before,) = await w.attempts(run_id)
    stream = w.stub.Heartbeat(metadata=w.auth())
    await w.shift_clock(19 * S)
    (kept,) = (await exchange(stream, beat("w-1", (run_id, 1)))).directives
    assert kept.directive == wpb.DIRECTIVE_CONTINUE
    assert as_datetime(kept.lease_expire_time) == before["lease_expire_time"]
    (same,) = await w.attempts(run_id)
    assert (same["lease_expire_time"], same["beat_time"], same["xmin"]) == (
        before["lease_expire_time"],
        None,
        before["xmin"],
    )
    await w.shift_clock(2 * S)  # 21 s of 60 spent
    response = await exchange(stream, beat("w-1", (run_id, 1)))
    (renewed,) = response.directives
    (after,) = await w.attempts(run_id)
    assert after["lease_expire_time"] == as_datetime(response.server_time) + timedelta(seconds=60)
    assert as_datetime(renewed.lease_expire_time) == after["lease_expire_time"]
    assert after["beat_time"] is not None
    await stream.done_writing()


async def test_a_bad_heartbeat_names_its_fields(env: ApiAndWorkers) -> None:
    w = env.w
    stream = w.stub.Heartbeat(metadata=w.auth())
    await stream.write(wpb.HeartbeatRequest(attempts=[wpb.AttemptRef(run_id="nope", attempt=0)]))
    bad = await failure(stream.read())
    assert bad.code == grpc.StatusCode.INVALID_ARGUMENT
    assert set(bad.fields) == {"worker_id", "attempts[0].run_id", "attempts[0].attempt"}


# --- overlap ------------------------------------------------------------------------------------


async def test_overlap_skip(env: ApiAndWorkers) -> None:
    w, api = env.w, env.api
    job = await create_job(api, job_message(overlap=job_pb2.OVERLAP_POLICY_SKIP))
    first, second, third = [await trigger(api, job, f"r{i}") for i in range(3)]
    assert (await w.start(first)).decision == STARTED
    refused = await w.start(second, "d-2")
    assert (refused.decision, refused.refusal_reason) == (REFUSED, "RUN_SKIPPED")
    row = await w.run_row(second)
    assert (row["state"], row["reason"]) == ("SKIPPED", "OVERLAP")
    assert await w.attempts(second) == []
    # Still held while the first waits for its retry.
    await w.complete(first, 1, FAILED, error="boom")
    assert (await w.start(third, "d-3")).refusal_reason == "RUN_SKIPPED"


async def test_overlap_buffer_one_waits_once_and_is_released_by_the_final_report(
    env: ApiAndWorkers,
) -> None:
    w, api = env.w, env.api
    job = await create_job(api, job_message(overlap=job_pb2.OVERLAP_POLICY_BUFFER_ONE))
    first, second, third = [await trigger(api, job, f"r{i}") for i in range(3)]
    assert (await w.start(first, "d-1")).decision == STARTED
    waiting = await w.start(second, "d-2")
    assert (waiting.decision, waiting.refusal_reason) == (REFUSED, "RUN_WAITING")
    assert (await w.run_row(second))["state"] == "WAITING"
    skipped = await w.start(third, "d-3")
    assert (skipped.decision, skipped.refusal_reason) == (REFUSED, "RUN_SKIPPED")
    again = await w.start(second, "d-2")
    assert (again.decision, again.refusal_reason) == (REFUSED, "RUN_WAITING")
    assert len(await dispatches_of(w, second)) == 1

    # A retry is not the end: the run still holds the job.
    await w.complete(first, 1, FAILED, error="boom")
    assert (await w.run_row(second))["state"] == "WAITING"
    await w.shift_clock(timedelta(minutes=2))
    assert await requeue_due_retries(w.pool, await tokens_for(w, job), timedelta(0), 10) == 1
    assert (await w.run_row(second))["state"] == "WAITING"
    retry = (await dispatches_of(w, first))[-1].dispatch_id
    assert (await w.start(first, retry)).attempt == 2

    done = await w.complete(first, 2)
    assert done.run_state == "RUN_STATE_SUCCEEDED"
    row = await w.run_row(second)
    assert row["state"] == "QUEUED"
    dispatches = await dispatches_of(w, second)
    assert len(dispatches) == 2
    started = await w.start(second, dispatches[-1].dispatch_id)
    assert (started.decision, started.attempt) == (STARTED, 1)


async def running_then_newer(env: ApiAndWorkers) -> tuple[uuid.UUID, uuid.UUID]:
    """A CANCEL_PREVIOUS job's run started by w-old, and a newer run of it not started."""
    job = await create_job(env.api, job_message(overlap=job_pb2.OVERLAP_POLICY_CANCEL_PREVIOUS))
    old = await trigger(env.api, job, "old")
    assert (await env.w.start(old, "d-old", "w-old")).decision == STARTED
    return old, await trigger(env.api, job, "new")


async def test_overlap_cancel_previous_waits_for_the_acknowledgment(env: ApiAndWorkers) -> None:
    w = env.w
    old, new = await running_then_newer(env)

    wait = await w.start(new, "d-new", "w-new")
    assert wait.decision == TOO_EARLY
    retry_after = as_datetime(wait.effective_time) - as_datetime(wait.server_time)
    assert timedelta(0) < retry_after <= 2 * S
    assert (await w.attempts(old))[0]["cancel_reason"] == "SUPERSEDED"

    stream = w.stub.Heartbeat(metadata=w.auth())
    (directive,) = (await exchange(stream, beat("w-old", (old, 1)))).directives
    assert (directive.directive, directive.reason) == (wpb.DIRECTIVE_CANCEL, "SUPERSEDED")
    assert (await w.start(new, "d-new", "w-new")).decision == TOO_EARLY
    assert await w.attempts(new) == []

    report = await w.complete(old, 1, wpb.ATTEMPT_RESULT_CANCELLED, worker="w-old")
    assert report.run_state == "RUN_STATE_CANCELLED"
    row = await w.run_row(old)
    assert (row["state"], row["reason"]) == ("CANCELLED", "SUPERSEDED")
    assert (await w.attempts(old))[0]["outcome"] == "CANCELLED"
    started = await w.start(new, "d-new", "w-new")
    assert (started.decision, started.attempt) == (STARTED, 1)
    await stream.done_writing()


async def test_cancel_previous_skips_a_previous_run_another_transaction_holds(
    env: ApiAndWorkers,
) -> None:
    # The cancel request writes the previous run's row, which a report of it holds before its
    # job's lock: the start must not wait for it (the report may be waiting for this job's
    # lock). It is answered to ask again, and the next ask tells the attempt to stop.
    w = env.w
    old, new = await running_then_newer(env)
    async with w.pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT 1 FROM runs WHERE run_id = $1 FOR UPDATE", old)
        wait = await asyncio.wait_for(w.start(new, "d-new", "w-new"), 10)
        assert wait.decision == TOO_EARLY
    assert (await w.attempts(old))[0]["cancel_reason"] == ""
    assert (await w.start(new, "d-new", "w-new")).decision == TOO_EARLY
    assert (await w.attempts(old))[0]["cancel_reason"] == "SUPERSEDED"


async def test_cancel_previous_cancels_a_run_between_attempts_and_starts(
    env: ApiAndWorkers,
) -> None:
    w, api = env.w, env.api
    job = await create_job(api, job_message(overlap=job_pb2.OVERLAP_POLICY_CANCEL_PREVIOUS))
    old = await trigger(api, job, "old")
    await w.start(old, "d-old")
    await w.complete(old, 1, FAILED, error="boom")
    new = await trigger(api, job, "new")
    started = await w.start(new, "d-new")
    assert started.decision == STARTED
    row = await w.run_row(old)
    assert (row["state"], row["reason"]) == ("CANCELLED", "SUPERSEDED")


async def test_a_migration_adding_a_column_to_runs_costs_one_retry_not_an_error(
    db_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An expand migration that adds a column to runs, applied while this build runs, changes
    the result of the statements that read a run's whole row: PostgreSQL refuses each one a
    connection prepared before it once ("cached plan must not change result type"), and
    asyncpg prepares it again. A start batch so refused goes again one by one and starts; a
    trigger is a retryable UNAVAILABLE, never an INTERNAL."""
    async with running_api(db_dsn) as api, running_worker_api(db_dsn) as w:
        job = await create_job(api)
        first, second = await trigger(api, job, "r1"), await trigger(api, job, "r2")
        assert (await w.start(first)).decision == STARTED  # its statements prepared
        await w.db.execute("ALTER TABLE runs ADD COLUMN added_by_a_migration integer")
        assert (await w.start(second, delivery="d-2")).decision == STARTED
        (refused,) = [r for r in caplog.records if r.__dict__.get("operation") == "start"]
        assert "InvalidCachedStatementError" in refused.__dict__["error"]
        with pytest.raises(grpc.aio.AioRpcError) as changed:
            await trigger(api, job, "r3")
        assert changed.value.code() == grpc.StatusCode.UNAVAILABLE
        assert await trigger(api, job, "r3")


async def test_a_start_that_waits_too_long_for_the_run_lock_is_unavailable(db_dsn: str) -> None:
    """The scheduler's sessions carry a short lock_timeout: a start blocked behind a stuck
    transaction fails fast with a retryable UNAVAILABLE, not an INTERNAL."""
    async with (
        running_api(db_dsn) as api,
        running_worker_api(db_dsn, server_settings={"lock_timeout": "200"}) as w,
    ):
        run_id = await trigger(api, await create_job(api), "r1")
        holder = await asyncpg.connect(db_dsn)
        try:
            async with holder.transaction():
                await holder.execute("SELECT 1 FROM runs WHERE run_id = $1 FOR UPDATE", run_id)
                busy = await failure(
                    w.stub.StartAttempt(
                        wpb.StartAttemptRequest(run_id=str(run_id), delivery_id="d", worker_id="w"),
                        metadata=w.auth(),
                    )
                )
        finally:
            await holder.close()
        assert (busy.code, busy.reason) == (grpc.StatusCode.UNAVAILABLE, "CONTENDED")
        assert (await w.start(run_id)).decision == STARTED
