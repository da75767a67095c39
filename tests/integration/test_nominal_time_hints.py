"""The nominal time a worker says in a start, a beat or a report is a hint that finds the run in
its one weekly partition: with it, without it (an older worker) or with a wrong one (another
week's partition), each is answered exactly the same, fencing included. One out of the
Timestamp's range is INVALID_ARGUMENT naming its field."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Literal

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime_infra.codec.timeconv import TIMESTAMP_MAX_SECONDS, datetime_to_timestamp
from testkit.api import failure
from testkit.environments import ApiAndWorkers
from testkit.worker_api import WorkerClient, as_datetime, create_job, exchange, trigger

S = timedelta(seconds=1)
STARTED = wpb.START_DECISION_STARTED
REFUSED = wpb.START_DECISION_REFUSED
Hint = Literal["right", "none", "wrong"]
HINTS: list[Hint] = ["right", "none", "wrong"]


async def _runs(env: ApiAndWorkers, count: int) -> dict[uuid.UUID, datetime]:
    """Triggered runs of one job, each with its nominal time."""
    job = await create_job(env.api)
    runs = [await trigger(env.api, job, f"r{i}") for i in range(count)]
    return {r: (await env.w.run_row(r))["nominal_time"] for r in runs}


async def _week_partition(w: WorkerClient, run_id: uuid.UUID) -> str:
    table: str = await w.db.fetchval(
        "SELECT tableoid::regclass::text FROM runs WHERE run_id = $1", run_id
    )
    return table


def _said(nominal: datetime, hint: Hint) -> Timestamp | None:
    """The nominal time a worker says: the run's, none, or one nine days off (another week)."""
    if hint == "none":
        return None
    return datetime_to_timestamp(nominal if hint == "right" else nominal - 9 * 24 * 3600 * S)


async def _start_all(
    w: WorkerClient, runs: dict[uuid.UUID, datetime], hint: Hint, delivery: str
) -> list[tuple[int, int, str]]:
    request = wpb.StartAttemptsRequest(
        starts=[
            wpb.StartAttemptRequest(
                run_id=str(r),
                delivery_id=f"{delivery}-{r}",
                worker_id="w-1",
                nominal_time=_said(t, hint),
            )
            for r, t in runs.items()
        ]
    )
    answer = await w.stub.StartAttempts(request, metadata=w.auth())
    assert not any(e.HasField("error") for e in answer.results), answer
    return [
        (e.response.decision, e.response.attempt, e.response.refusal_reason) for e in answer.results
    ]


async def _report(
    w: WorkerClient,
    reports: list[tuple[uuid.UUID, datetime, int, wpb.AttemptResult.ValueType, str]],
    hint: Hint,
) -> list[tuple[str, str]]:
    """(code or run state, reason) of each report of (run, nominal, token, result, worker)."""
    request = wpb.CompleteAttemptsRequest(
        reports=[
            wpb.AttemptReport(
                report=wpb.CompleteAttemptRequest(
                    run_id=str(r),
                    result=result,
                    worker_id=worker,
                    retryable=True,
                    error="boom",
                    nominal_time=_said(t, hint),
                ),
                attempt=token,
            )
            for r, t, token, result, worker in reports
        ]
    )
    answer = await w.stub.CompleteAttempts(request, metadata=w.auth())
    return [
        (e.error.code, e.error.reason) if e.HasField("error") else (e.response.run_state, "")
        for e in answer.results
    ]


@pytest.mark.parametrize("hint", HINTS)
async def test_starts_are_answered_the_same_whatever_nominal_time_they_say(
    env: ApiAndWorkers, hint: Hint
) -> None:
    w = env.w
    runs = await _runs(env, 3)
    first = next(iter(runs))
    # The runs sit in a week's partition, not the default one, and a wrong hint names another.
    assert (await _week_partition(w, first)) != "runs_default"
    assert await _start_all(w, runs, hint, "d") == [(STARTED, 1, "")] * 3
    # The same deliveries again get their attempts back; another delivery is refused.
    assert await _start_all(w, runs, hint, "d") == [(STARTED, 1, "")] * 3
    assert await _start_all(w, runs, hint, "other") == [(REFUSED, 0, "ALREADY_STARTED")] * 3
    for run_id in runs:
        row = await w.run_row(run_id)
        assert (row["state"], row["attempt"]) == ("RUNNING", 1)
        assert [a["number"] for a in await w.attempts(run_id)] == [1]


@pytest.mark.parametrize("hint", HINTS)
async def test_beats_are_answered_the_same_whatever_nominal_time_they_say(
    env: ApiAndWorkers, hint: Hint
) -> None:
    w = env.w
    runs = await _runs(env, 2)
    (mine, mine_at), (theirs, theirs_at) = runs.items()
    assert (await w.start(mine, "d-1", "w-1")).decision == STARTED
    assert (await w.start(theirs, "d-2", "w-2")).decision == STARTED
    await w.shift_clock(21 * S)  # a third of the lease spent: a beat renews it
    stream = w.stub.Heartbeat(metadata=w.auth())
    refs = [(mine, mine_at, 1), (mine, mine_at, 2), (theirs, theirs_at, 1)]
    response = await exchange(
        stream,
        wpb.HeartbeatRequest(
            worker_id="w-1",
            attempts=[
                wpb.AttemptRef(run_id=str(r), attempt=n, nominal_time=_said(t, hint))
                for r, t, n in refs
            ],
        ),
    )
    renewed, stale, foreign = response.directives
    (row,) = await w.attempts(mine)
    assert renewed.directive == wpb.DIRECTIVE_CONTINUE
    assert as_datetime(renewed.lease_expire_time) == row["lease_expire_time"]
    assert row["lease_expire_time"] == as_datetime(response.server_time) + 60 * S
    # Fencing: a stale token and another worker's attempt are refused, and not renewed.
    assert (stale.directive, stale.reason) == (wpb.DIRECTIVE_CANCEL, "ATTEMPT_CLOSED")
    assert (foreign.directive, foreign.reason) == (wpb.DIRECTIVE_CANCEL, "ATTEMPT_CLOSED")
    (other,) = await w.attempts(theirs)
    assert other["beat_time"] is None
    await stream.done_writing()


@pytest.mark.parametrize("hint", HINTS)
async def test_reports_are_answered_the_same_whatever_nominal_time_they_say(
    env: ApiAndWorkers, hint: Hint
) -> None:
    w = env.w
    runs = await _runs(env, 2)
    (ok, ok_at), (failing, failing_at) = runs.items()
    for i, run_id in enumerate(runs):
        assert (await w.start(run_id, f"d-{i}")).decision == STARTED
    done, failed = wpb.ATTEMPT_RESULT_SUCCEEDED, wpb.ATTEMPT_RESULT_FAILED
    stale = await _report(
        w, [(ok, ok_at, 2, done, "w-1"), (failing, failing_at, 1, failed, "w-2")], hint
    )
    assert stale == [("ABORTED", "STALE_ATTEMPT")] * 2
    assert [(await w.run_row(r))["state"] for r in runs] == ["RUNNING"] * 2
    closed = await _report(
        w, [(ok, ok_at, 1, done, "w-1"), (failing, failing_at, 1, failed, "w-1")], hint
    )
    assert closed == [("RUN_STATE_SUCCEEDED", ""), ("RUN_STATE_RETRY_WAIT", "")]
    assert [a["outcome"] for a in await w.attempts(ok)] == ["SUCCEEDED"]
    assert [a["outcome"] for a in await w.attempts(failing)] == ["FAILED"]
    again = await _report(w, [(ok, ok_at, 1, done, "w-1")], hint)
    assert again == [("ABORTED", "STALE_ATTEMPT")]


async def test_a_nominal_time_out_of_range_is_invalid_argument_naming_it(
    env: ApiAndWorkers,
) -> None:
    w = env.w
    (run_id,) = await _runs(env, 1)
    past_the_range = Timestamp(seconds=TIMESTAMP_MAX_SECONDS + 1)
    start = wpb.StartAttemptRequest(
        run_id=str(run_id), delivery_id="d", worker_id="w-1", nominal_time=past_the_range
    )
    answer = await w.stub.StartAttempts(wpb.StartAttemptsRequest(starts=[start]), metadata=w.auth())
    (entry,) = answer.results
    assert entry.error.code == "INVALID_ARGUMENT"
    assert "starts[0].nominal_time" in entry.error.message
    assert (await w.run_row(run_id))["state"] == "QUEUED"
    stream = w.stub.Heartbeat(metadata=w.auth())
    ref = wpb.AttemptRef(run_id=str(run_id), attempt=1, nominal_time=past_the_range)
    await stream.write(wpb.HeartbeatRequest(worker_id="w-1", attempts=[ref]))
    bad = await failure(stream.read())
    assert bad.code == grpc.StatusCode.INVALID_ARGUMENT
    assert set(bad.fields) == {"attempts[0].nominal_time"}
