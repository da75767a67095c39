"""A worker token bound to a worker-id prefix speaks only for the worker ids that begin with it,
in every WorkerService call; an unbound token speaks for any (test_worker_service)."""

from __future__ import annotations

from dataclasses import replace

import grpc

from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime_infra.admin import create_worker_token
from testkit.api import failure
from testkit.environments import ApiAndWorkers
from testkit.worker_api import WorkerClient, create_job, exchange, trigger

DENIED = grpc.StatusCode.PERMISSION_DENIED
NOT_BOUND = "WORKER_ID_NOT_BOUND"


async def bound_to(w: WorkerClient, prefix: str) -> WorkerClient:
    return replace(w, token=await create_worker_token(w.db, worker_id_prefix=prefix))


async def test_starts_and_reports_naming_another_fleets_worker_are_refused_entry_by_entry(
    env: ApiAndWorkers,
) -> None:
    fleet = await bound_to(env.w, "fleet-a-")
    job = await create_job(env.api)
    theirs, ours = [str(await trigger(env.api, job, f"r{i}")) for i in range(2)]
    starts = wpb.StartAttemptsRequest(
        starts=[
            wpb.StartAttemptRequest(run_id=theirs, delivery_id="d-1", worker_id="fleet-b-1"),
            wpb.StartAttemptRequest(run_id=ours, delivery_id="d-2", worker_id="fleet-a-1"),
        ]
    )
    refused, started = (await fleet.stub.StartAttempts(starts, metadata=fleet.auth())).results
    assert (refused.error.code, refused.error.reason) == ("PERMISSION_DENIED", NOT_BOUND)
    assert "starts[0].worker_id" in refused.error.message
    assert started.response.decision == wpb.START_DECISION_STARTED
    assert await env.w.attempts(theirs) == []  # nothing written for the refused entry

    def report(worker: str) -> wpb.AttemptReport:
        done = wpb.CompleteAttemptRequest(
            run_id=ours, worker_id=worker, result=wpb.ATTEMPT_RESULT_SUCCEEDED
        )
        return wpb.AttemptReport(report=done, attempt=1)

    reports = wpb.CompleteAttemptsRequest(reports=[report("fleet-b-1")])
    (answer,) = (await fleet.stub.CompleteAttempts(reports, metadata=fleet.auth())).results
    assert (answer.error.code, answer.error.reason) == ("PERMISSION_DENIED", NOT_BOUND)
    assert "reports[0].report.worker_id" in answer.error.message
    assert (await env.w.run_row(ours))["state"] == "RUNNING"
    reports = wpb.CompleteAttemptsRequest(reports=[report("fleet-a-1")])
    (answer,) = (await fleet.stub.CompleteAttempts(reports, metadata=fleet.auth())).results
    assert answer.response.run_state == "RUN_STATE_SUCCEEDED"


async def test_the_single_calls_are_bound_too_and_a_prefix_is_only_a_prefix(
    env: ApiAndWorkers,
) -> None:
    one = await bound_to(env.w, "w-1")
    run_id = str(await trigger(env.api, await create_job(env.api), "r1"))
    refused = await failure(one.start(run_id, worker="w-2"))
    assert (refused.code, refused.reason) == (DENIED, NOT_BOUND)
    # A prefix, not an id: "w-1" lets "w-10" through (bind "w-1-" for ids "w-1-...").
    started = await one.start(run_id, worker="w-10")
    assert started.decision == wpb.START_DECISION_STARTED
    refused = await failure(one.complete(run_id, started.attempt, worker="w-2"))
    assert (refused.code, refused.reason) == (DENIED, NOT_BOUND)
    assert (await one.complete(run_id, started.attempt, worker="w-10")).run_state == (
        "RUN_STATE_SUCCEEDED"
    )


async def test_a_heartbeat_or_a_key_fetch_naming_another_worker_is_refused(
    env: ApiAndWorkers,
) -> None:
    one = await bound_to(env.w, "w-1")
    run_id = str(await trigger(env.api, await create_job(env.api), "r1"))
    assert (await one.start(run_id, worker="w-1")).decision == wpb.START_DECISION_STARTED
    ref = wpb.AttemptRef(run_id=run_id, attempt=1)

    stream = one.stub.Heartbeat(metadata=one.auth())
    answer = await exchange(stream, wpb.HeartbeatRequest(worker_id="w-1", attempts=[ref]))
    assert answer.directives[0].directive == wpb.DIRECTIVE_CONTINUE
    stream = one.stub.Heartbeat(metadata=one.auth())
    beat = wpb.HeartbeatRequest(worker_id="w-2", attempts=[ref])
    refused = await failure(exchange(stream, beat))
    assert (refused.code, refused.reason) == (DENIED, NOT_BOUND)

    keys = wpb.GetSigningKeysRequest(team=env.api.team, run_id=run_id, worker_id="w-2")
    refused = await failure(one.stub.GetSigningKeys(keys, metadata=one.auth()))
    assert (refused.code, refused.reason) == (DENIED, NOT_BOUND)
    # The same fetch with an unbound token reaches the rule that the run is not w-2's.
    refused = await failure(env.w.stub.GetSigningKeys(keys, metadata=env.w.auth()))
    assert (refused.code, refused.reason) == (DENIED, "KEYS_NOT_HELD")
