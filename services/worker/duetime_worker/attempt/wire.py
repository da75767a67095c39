"""The worker's edge with the worker contract (``duetime.worker.v1``): a start written and its
answer read (a started run into what its target is called for, ``targets.run``), once per
attempt; a beat written; a team's signing keys read from their fetch; an outcome written as
its report. The attempt's path, the targets and the herd never see a wire message (a dispatch
message is read at the intake's edge, ``intake.wire``)."""

from __future__ import annotations

from collections.abc import Iterable

from google.protobuf.timestamp_pb2 import Timestamp

from duetime.jobs.v1 import job_pb2
from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_core.jobspec import CallSigning
from duetime_infra.codec.outcome_codec import CALL_NUMBERS, RESULT_NUMBERS
from duetime_infra.codec.target_codec import method_of, signing_of
from duetime_infra.signing import signing_key_from
from duetime_worker.attempt.lease import lease_length
from duetime_worker.attempt.lifecycle import Attempt, Started, StartRefused, TooEarly
from duetime_worker.targets.http.team_keys import FetchedKeys
from duetime_worker.targets.outcome import Outcome
from duetime_worker.targets.run import ContainerTask, HttpCall, TargetRun


def target_run(run: pb.RunSpec) -> TargetRun:
    """The run as its target is called for it."""
    return TargetRun(
        run_id=run.run_id,
        target=_target(run.target),
        job_id=run.job_id,
        team=run.team,
        idempotency_key=run.idempotency_key,
        traceparent=run.traceparent,
        key_ids=tuple(run.signing_keys.key_ids) if run.HasField("signing_keys") else None,
    )


def _target(target: job_pb2.Target) -> HttpCall | ContainerTask | None:
    kind = target.WhichOneof("kind")
    if kind == "http":
        http = target.http
        return HttpCall(
            url=http.url,
            method=method_of(http.method),
            headers=dict(http.headers),
            body=http.body,
            signing=signing_of(http.signing),
            token_audience=http.token_audience,
        )
    if kind == "container":
        task = target.container
        return ContainerTask(
            image=task.image,
            command=tuple(task.command),
            args=tuple(task.args),
            env=dict(task.env),
        )
    return None


def stamp(attempt: Attempt) -> Timestamp | None:
    """The attempt's run's nominal time, as its start's answer said it (None: not said)."""
    return _timestamp(attempt.nominal_time)


def beat_request(
    worker_id: str, incarnation: str, attempts: Iterable[Attempt]
) -> pb.HeartbeatRequest:
    """A beat listing ``attempts``, each with how far its call got and its nominal time."""
    return pb.HeartbeatRequest(
        worker_id=worker_id,
        incarnation=incarnation,
        attempts=[
            pb.AttemptRef(
                run_id=a.run_id,
                attempt=a.attempt,
                call_progress=CALL_NUMBERS[a.call],
                nominal_time=stamp(a),
            )
            for a in attempts
        ],
    )


def _timestamp(nanoseconds: int | None) -> Timestamp | None:
    if nanoseconds is None:
        return None
    seconds, nanos = divmod(nanoseconds, 1_000_000_000)
    return Timestamp(seconds=seconds, nanos=nanos)


def start_request(
    run_id: str, delivery_id: str, worker_id: str, early: bool, nominal_time: int | None = None
) -> pb.StartAttemptRequest:
    """A start of ``run_id``'s attempt (``early``: asked ahead of the run's time;
    ``nominal_time``: the run's, in nanoseconds, as its dispatch said it)."""
    return pb.StartAttemptRequest(
        run_id=run_id,
        delivery_id=delivery_id,
        worker_id=worker_id,
        early=early,
        nominal_time=_timestamp(nominal_time),
    )


def server_time(answer: pb.StartAttemptResponse) -> int:
    """When the scheduler read its clock for a start's answer, in nanoseconds since the epoch;
    0: not said (an older scheduler)."""
    return answer.server_time.ToNanoseconds()


def started_from(answer: pb.StartAttemptResponse, sent_at: float) -> Started:
    """A STARTED answer read once, its lease counted from ``sent_at`` (the event loop's time its
    request was sent); TooEarly for TOO_EARLY, StartRefused for any other decision."""
    if answer.decision != pb.START_DECISION_STARTED:
        if answer.decision == pb.START_DECISION_TOO_EARLY:
            raise TooEarly(answer.effective_time.ToNanoseconds())
        raise StartRefused(answer.refusal_reason)
    run = answer.run
    lease = lease_length(
        answer.lease_expire_time.ToNanoseconds(), answer.server_time.ToNanoseconds()
    )
    return Started(
        run=target_run(run),
        attempt=answer.attempt,
        lease_deadline=sent_at + lease,
        timeout=run.attempt_timeout.ToTimedelta().total_seconds(),
        call_time=answer.call_time.ToNanoseconds() if answer.HasField("call_time") else None,
        at_most_once=run.delivery == job_pb2.DELIVERY_AT_MOST_ONCE,
        nominal_time=run.nominal_time.ToNanoseconds() if run.HasField("nominal_time") else None,
    )


def fetched_keys(answer: pb.GetSigningKeysResponse) -> FetchedKeys:
    """A team's keys as a fetch answered them; ValueError for a key that cannot be read."""
    keys = tuple(
        signing_key_from(k.key_id, k.webhook_secret, k.token_private_key) for k in answer.keys
    )
    # Unspecified (or unknown to this build): the team signs nothing by default.
    return FetchedKeys(keys, signing_of(answer.default_call_signing) or CallSigning.OFF)


def complete_request(
    run_id: str,
    outcome: Outcome,
    worker_id: str,
    call_time: int | None,
    nominal_time: int | None = None,
) -> pb.CompleteAttemptRequest:
    """The report of an attempt that ended with ``outcome`` (``call_time``: when an attempt
    started ahead began its call, in nanoseconds by the server's clock; ``nominal_time``: its
    run's, as its start's answer said it)."""
    request = pb.CompleteAttemptRequest(
        run_id=run_id,
        result=RESULT_NUMBERS[outcome.result],
        error=outcome.error,
        retryable=outcome.retryable,
        worker_id=worker_id,
        call_progress=CALL_NUMBERS[outcome.call],
        nominal_time=_timestamp(nominal_time),
    )
    if call_time is not None:
        request.call_time.FromNanoseconds(call_time)
    return request
