"""The worker's edge with its contract (``duetime_worker.attempt.wire``): a started run read
into the targets' own types, a fetch's keys, an outcome written as its report."""

from __future__ import annotations

import pytest
from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

from duetime.jobs.v1 import job_pb2
from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_core.attempts import CallProgress
from duetime_core.jobspec import CallSigning, HttpMethod
from duetime_core.records import AttemptOutcome
from duetime_infra.signing import new_signing_key
from duetime_worker.attempt.lifecycle import Attempt, Started, StartRefused, TooEarly
from duetime_worker.attempt.wire import (
    complete_request,
    fetched_keys,
    server_time,
    stamp,
    start_request,
    started_from,
    target_run,
)
from duetime_worker.targets.outcome import Outcome
from duetime_worker.targets.run import ContainerTask, HttpCall, TargetRun


def test_a_started_http_run_is_read_with_every_fact_its_call_needs() -> None:
    http = job_pb2.HttpTarget(
        url="https://t.test/hook",
        method=job_pb2.HTTP_METHOD_PUT,
        headers={"X-A": "1"},
        body=b"{}",
        signing=job_pb2.CALL_SIGNING_WEBHOOK,
        token_audience="aud",
    )
    spec = pb.RunSpec(
        run_id="r1",
        job_id="j1",
        team="team-a",
        idempotency_key="j1/2026-01-01T00:00:00Z",
        traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        target=job_pb2.Target(http=http),
        signing_keys=pb.SigningKeyIds(key_ids=["k1", "k2"]),
    )
    assert target_run(spec) == TargetRun(
        run_id="r1",
        target=HttpCall(
            "https://t.test/hook", HttpMethod.PUT, {"X-A": "1"}, b"{}", CallSigning.WEBHOOK, "aud"
        ),
        job_id="j1",
        team="team-a",
        idempotency_key="j1/2026-01-01T00:00:00Z",
        traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        key_ids=("k1", "k2"),
    )


def test_what_a_start_leaves_unsaid_reads_as_the_defaults() -> None:
    spec = pb.RunSpec(run_id="r1", target=job_pb2.Target(http=job_pb2.HttpTarget(url="u")))
    run = target_run(spec)
    assert run.target == HttpCall("u", HttpMethod.POST, {}, b"", None, "")
    assert run.key_ids is None  # not said: an older scheduler's start
    spec.signing_keys.SetInParent()
    assert target_run(spec).key_ids == ()  # said: none
    assert target_run(pb.RunSpec(run_id="r1")).target is None


def test_a_started_container_run_is_read_as_its_task() -> None:
    task = job_pb2.ContainerTarget(image="i:1", command=["sh"], args=["-c", "x"], env={"A": "b"})
    run = target_run(pb.RunSpec(run_id="r1", target=job_pb2.Target(container=task)))
    assert run.target == ContainerTask("i:1", ("sh",), ("-c", "x"), {"A": "b"})


@pytest.mark.parametrize(
    ("outcome", "result", "call"),
    [
        (Outcome.succeeded(status=200), pb.ATTEMPT_RESULT_SUCCEEDED, pb.CALL_PROGRESS_ANSWERED),
        (
            Outcome.failed("x", retryable=True, call=CallProgress.BEGUN),
            pb.ATTEMPT_RESULT_FAILED,
            pb.CALL_PROGRESS_BEGUN,
        ),
        (Outcome.timed_out("x"), pb.ATTEMPT_RESULT_TIMED_OUT, pb.CALL_PROGRESS_UNSPECIFIED),
        (
            Outcome.cancelled("x", call=CallProgress.NOT_BEGUN),
            pb.ATTEMPT_RESULT_CANCELLED,
            pb.CALL_PROGRESS_NOT_BEGUN,
        ),
        (Outcome.handed_back("x"), pb.ATTEMPT_RESULT_HANDED_BACK, pb.CALL_PROGRESS_UNSPECIFIED),
    ],
)
def test_an_outcome_is_reported_with_its_result_and_how_far_its_call_got(
    outcome: Outcome, result: int, call: int
) -> None:
    request = complete_request("r1", outcome, "w1", None)
    assert (request.result, request.call_progress) == (result, call)
    assert (request.run_id, request.worker_id, request.error) == ("r1", "w1", outcome.error)
    assert request.retryable == outcome.retryable
    assert not request.HasField("call_time")
    assert complete_request("r1", outcome, "w1", 1_500_000_000).call_time.nanos == 500_000_000


def test_every_result_a_worker_reports_has_its_number() -> None:
    reported = set(AttemptOutcome) - {AttemptOutcome.LEASE_EXPIRED}  # the scheduler's word
    for result in reported:
        assert complete_request("r", Outcome(result), "w", None).result != 0


def test_a_fetch_is_read_as_the_teams_keys_and_default() -> None:
    key = new_signing_key("k1")
    material = pb.SigningKeyMaterial(
        key_id="k1", webhook_secret=key.secret, token_private_key=key.private_der()
    )
    answer = pb.GetSigningKeysResponse(
        keys=[material], default_call_signing=job_pb2.CALL_SIGNING_ID_TOKEN
    )
    fetched = fetched_keys(answer)
    assert [k.key_id for k in fetched.keys] == ["k1"]
    assert fetched.default is CallSigning.ID_TOKEN
    assert fetched_keys(pb.GetSigningKeysResponse()).default is CallSigning.OFF


def test_a_start_is_written_with_its_delivery_worker_and_whether_it_is_ahead() -> None:
    assert start_request("r", "d@i", "w", True) == pb.StartAttemptRequest(
        run_id="r", delivery_id="d@i", worker_id="w", early=True
    )
    assert not start_request("r", "d@i", "w", False).early


def test_a_start_report_and_beat_pass_the_runs_nominal_time_on_when_known() -> None:
    at = 1_780_000_000 * 10**9 + 7
    said = Timestamp(seconds=1_780_000_000, nanos=7)
    assert start_request("r", "d@i", "w", False, at).nominal_time == said
    assert not start_request("r", "d@i", "w", False).HasField("nominal_time")
    outcome = Outcome.succeeded()
    assert complete_request("r", outcome, "w", None, at).nominal_time == said
    assert not complete_request("r", outcome, "w", None).HasField("nominal_time")
    assert stamp(Attempt("r", 1, nominal_time=at)) == said
    assert stamp(Attempt("r", 1)) is None


def test_a_started_answer_is_read_with_its_run_timeout_and_call_time() -> None:
    answer = pb.StartAttemptResponse(
        decision=pb.START_DECISION_STARTED,
        attempt=2,
        server_time=Timestamp(seconds=1_000),
        lease_expire_time=Timestamp(seconds=1_030),
        call_time=Timestamp(seconds=1_002, nanos=5),
        run=pb.RunSpec(
            run_id="r", attempt_timeout=Duration(seconds=90), nominal_time=Timestamp(seconds=990)
        ),
    )
    assert server_time(answer) == 1_000 * 10**9
    assert started_from(answer, 10.0) == Started(
        run=TargetRun(run_id="r", target=None),
        attempt=2,
        lease_deadline=40.0,
        timeout=90.0,
        call_time=1_002 * 10**9 + 5,
        at_most_once=False,
        nominal_time=990 * 10**9,
    )


def test_a_started_answer_that_says_little_is_read_as_a_plain_attempt() -> None:
    started = started_from(pb.StartAttemptResponse(decision=pb.START_DECISION_STARTED), 10.0)
    assert started == Started(run=TargetRun(run_id="", target=None), attempt=0, timeout=0.0)
    assert server_time(pb.StartAttemptResponse()) == 0


def test_too_early_says_when_to_ask_again_and_any_other_answer_is_a_refusal() -> None:
    early = pb.StartAttemptResponse(
        decision=pb.START_DECISION_TOO_EARLY, effective_time=Timestamp(seconds=7, nanos=9)
    )
    with pytest.raises(TooEarly) as too_early:
        started_from(early, 0.0)
    assert too_early.value.again == 7 * 10**9 + 9
    refused = pb.StartAttemptResponse(
        decision=pb.START_DECISION_REFUSED, refusal_reason="JOB_PAUSED"
    )
    for answer in (refused, pb.StartAttemptResponse(), pb.StartAttemptResponse(decision=42)):  # type: ignore[arg-type]
        with pytest.raises(StartRefused) as refusal:
            started_from(answer, 0.0)
        assert refusal.value.reason == answer.refusal_reason
