"""WorkerService over gRPC: convert the request, call the attempt store, convert the answer.

Bad input is INVALID_ARGUMENT with every bad field named at once; the fencing token of a report
travels in the ``duetime-attempt`` metadata key. A started run's secrets are opened here, in the
answer that hands the run to its worker, and nowhere else.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from grpc import aio
from opentelemetry.trace import Span, Status, StatusCode

from duetime.jobs.v1 import job_pb2
from duetime.worker.v1 import worker_service_pb2 as pb
from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_core.attempts import MAX_ATTEMPTS_PER_BEAT, CallProgress
from duetime_core.errors import DuetimeError, FieldViolation, InvalidArgument
from duetime_core.jobspec import CallSigning
from duetime_core.records import AttemptOutcome
from duetime_core.teams import team_id_problem
from duetime_infra.codec.attempt_token import MAX_ATTEMPT_NUMBER, read_attempt_token
from duetime_infra.codec.policy_codec import DELIVERY_NUMBERS
from duetime_infra.codec.target_codec import SIGNING_NUMBERS, encode_target_clear
from duetime_infra.codec.timeconv import (
    datetime_to_timestamp,
    timedelta_to_duration,
    timestamp_to_datetime,
)
from duetime_infra.pg.attempts.results import (
    AttemptRef,
    Report,
    RunToExecute,
    StartAnswer,
    StartRequest,
    StartResult,
)
from duetime_infra.pg.attempts.store import MAX_BATCH, AttemptStore
from duetime_infra.pg.teams.signing_keys import team_signing
from duetime_infra.secrets.sealing import SecretBox, SecretUnreadable
from duetime_infra.tracecontext import ATTEMPT, RUN_ID, rpc_span, start_entry_span

Context = aio.ServicerContext[Any, Any]

MAX_ID_LENGTH = 200

_DECISIONS = {
    StartAnswer.STARTED: pb.START_DECISION_STARTED,
    StartAnswer.TOO_EARLY: pb.START_DECISION_TOO_EARLY,
    StartAnswer.REFUSED: pb.START_DECISION_REFUSED,
}
_RESULTS = {
    pb.ATTEMPT_RESULT_SUCCEEDED: AttemptOutcome.SUCCEEDED,
    pb.ATTEMPT_RESULT_FAILED: AttemptOutcome.FAILED,
    pb.ATTEMPT_RESULT_TIMED_OUT: AttemptOutcome.TIMED_OUT,
    pb.ATTEMPT_RESULT_CANCELLED: AttemptOutcome.CANCELLED,
    pb.ATTEMPT_RESULT_HANDED_BACK: AttemptOutcome.HANDED_BACK,
}


_CALLS: dict[int, CallProgress] = {
    pb.CALL_PROGRESS_NOT_BEGUN: CallProgress.NOT_BEGUN,
    pb.CALL_PROGRESS_BEGUN: CallProgress.BEGUN,
    pb.CALL_PROGRESS_ANSWERED: CallProgress.ANSWERED,
}


def _read_call(
    violations: list[FieldViolation], field: str, value: int, *, beat: bool = False
) -> CallProgress | None:
    """How far a call got (None: unspecified); in a heartbeat, an answer counts as begun (the
    report says the rest)."""
    if value == pb.CALL_PROGRESS_UNSPECIFIED:
        return None
    call = _CALLS.get(value)
    if call is None:
        violations.append(FieldViolation(field, f"unknown value {value}"))
    if beat and call is CallProgress.ANSWERED:
        return CallProgress.BEGUN
    return call


def _read_run_id(violations: list[FieldViolation], field: str, text: str) -> uuid.UUID:
    if not text:
        violations.append(FieldViolation(field, "required"))
        return uuid.UUID(int=0)
    try:
        return uuid.UUID(text)
    except ValueError:
        violations.append(FieldViolation(field, f"must be a UUID, got {text[:64]!r}"))
        return uuid.UUID(int=0)


def _read_id(violations: list[FieldViolation], field: str, text: str) -> str:
    if not text:
        violations.append(FieldViolation(field, "required"))
    elif len(text) > MAX_ID_LENGTH:
        violations.append(
            FieldViolation(field, f"at most {MAX_ID_LENGTH} characters, got {len(text)}")
        )
    elif not text.isprintable():
        violations.append(FieldViolation(field, "must not contain control characters"))
    return text


def _check(violations: list[FieldViolation]) -> None:
    if violations:
        raise InvalidArgument(violations)


def _check_batch(field: str, size: int) -> None:
    if not 1 <= size <= MAX_BATCH:
        raise InvalidArgument.field(field, f"1 to {MAX_BATCH} entries, got {size}")


def entry_error(error: DuetimeError) -> pb.EntryError:
    return pb.EntryError(code=error.code.value, reason=error.reason, message=error.message)


def _encode_run(run: RunToExecute, secrets: SecretBox) -> pb.RunSpec:
    out = pb.RunSpec(
        run_id=str(run.run_id),
        job_id=str(run.key.job_id),
        team=run.team_id,
        idempotency_key=run.key.canonical(),
        traceparent=run.traceparent,
    )
    datetime_to_timestamp(run.key.nominal_time, out.nominal_time)
    datetime_to_timestamp(run.effective_time, out.effective_time)
    out.target.CopyFrom(
        encode_target_clear(secrets.open_target(run.key.job_id, run.snapshot.target))
    )
    _resolve_signing(run, out.target)
    timedelta_to_duration(run.snapshot.attempt_timeout, out.attempt_timeout)
    out.delivery = DELIVERY_NUMBERS[run.snapshot.delivery]
    return out


def _resolve_signing(run: RunToExecute, target: job_pb2.Target) -> None:
    """A call that follows its team's default says OFF when that default is off, so the worker
    neither fetches nor waits for keys it will not use. Under a default that signs, the call
    still says unspecified: the worker, which needs the team's keys then anyway, reads the
    default with them and knows the job did not ask (see ``CallSigner.sign``)."""
    if (
        target.HasField("http")
        and target.http.signing == job_pb2.CALL_SIGNING_UNSPECIFIED
        and run.team_signing is CallSigning.OFF
    ):
        target.http.signing = job_pb2.CALL_SIGNING_OFF


def encode_start(result: StartResult, secrets: SecretBox) -> pb.StartAttemptResponse:
    out = pb.StartAttemptResponse(
        decision=_DECISIONS[result.answer],
        attempt=result.attempt,
        refusal_reason=result.refusal,
    )
    datetime_to_timestamp(result.server_time, out.server_time)
    if result.effective_time is not None:
        datetime_to_timestamp(result.effective_time, out.effective_time)
    if result.lease_expire_time is not None:
        datetime_to_timestamp(result.lease_expire_time, out.lease_expire_time)
    if result.call_time is not None:
        datetime_to_timestamp(result.call_time, out.call_time)
    if result.run is not None:
        out.run.CopyFrom(_encode_run(result.run, secrets))
    return out


def _read_call_time(
    violations: list[FieldViolation], field: str, report: pb.CompleteAttemptRequest
) -> datetime | None:
    """The call's reported start (None when not given)."""
    if not report.HasField("call_time"):
        return None
    try:
        return timestamp_to_datetime(report.call_time)
    except ValueError as error:
        violations.append(FieldViolation(field, str(error)))
        return None


def _read_start(
    violations: list[FieldViolation], prefix: str, request: pb.StartAttemptRequest
) -> StartRequest:
    """One start, as StartAttempt and each entry of StartAttempts read it; ``prefix`` places the
    field paths of a batch entry (``starts[3].``)."""
    return StartRequest(
        _read_run_id(violations, f"{prefix}run_id", request.run_id),
        _read_id(violations, f"{prefix}delivery_id", request.delivery_id),
        _read_id(violations, f"{prefix}worker_id", request.worker_id),
        request.early,
    )


def _read_report(
    violations: list[FieldViolation],
    prefix: str,
    report: pb.CompleteAttemptRequest,
    attempt: int,
) -> Report | None:
    """One report of attempt ``attempt`` (its fencing token, read by the caller), as
    CompleteAttempt and each entry of CompleteAttempts read it; None when its result is missing
    or unknown (a violation says so). ``prefix`` places the field paths of a batch entry."""
    run_id = _read_run_id(violations, f"{prefix}run_id", report.run_id)
    worker_id = _read_id(violations, f"{prefix}worker_id", report.worker_id)
    outcome = _RESULTS.get(report.result)
    if outcome is None:
        problem = "required" if report.result == 0 else f"unknown value {report.result}"
        violations.append(FieldViolation(f"{prefix}result", problem))
    call = _read_call(violations, f"{prefix}call_progress", report.call_progress)
    call_time = _read_call_time(violations, f"{prefix}call_time", report)
    if outcome is None:
        return None
    return Report(
        run_id, attempt, worker_id, outcome, report.retryable, report.error, call_time, call
    )


def _end_failed(span: Span | None, error: DuetimeError) -> None:
    """Ends an entry's span with the error its entry was answered with."""
    if span is not None:
        span.set_status(Status(StatusCode.ERROR, f"{error.code.value}: {error.reason}"))
        span.end()


class WorkerServicer(worker_service_pb2_grpc.WorkerServiceServicer):
    def __init__(self, store: AttemptStore, secrets: SecretBox) -> None:
        self._store = store
        self._secrets = secrets

    async def GetSigningKeys(
        self, request: pb.GetSigningKeysRequest, context: Context
    ) -> pb.GetSigningKeysResponse:
        """The team's signing keys, opened here, as job secrets are, for the worker that
        signs its calls; never logged."""
        if team_id_problem(request.team) is not None:
            raise InvalidArgument.field("team", "must be a team id")
        found = await team_signing(self._store.pool, self._secrets, request.team)
        return pb.GetSigningKeysResponse(
            keys=[
                pb.SigningKeyMaterial(
                    key_id=key.key_id,
                    webhook_secret=key.secret,
                    token_private_key=key.private_der(),
                )
                for key in found.keys
            ],
            default_call_signing=SIGNING_NUMBERS[found.default],
        )

    async def StartAttempt(
        self, request: pb.StartAttemptRequest, context: Context
    ) -> pb.StartAttemptResponse:
        violations: list[FieldViolation] = []
        start = _read_start(violations, "", request)
        _check(violations)
        # A span in the run's trace: the worker sends its context with the call.
        with rpc_span("start attempt", context.invocation_metadata()) as span:
            span.set_attribute(RUN_ID, request.run_id)
            (result,) = await self._store.start_many([start])
            if isinstance(result, DuetimeError):
                raise result
            span.set_attributes({ATTEMPT: result.attempt, "duetime.decision": result.answer.value})
        try:
            return encode_start(result, self._secrets)
        except SecretUnreadable as error:
            await self._end_unreadable(result, start.worker_id, error)
            raise

    async def _end_unreadable(
        self, started: StartResult, worker_id: str, error: SecretUnreadable
    ) -> None:
        """A run started whose secrets this scheduler cannot open ends at once, failed without
        a retry (its team is alerted; a redrive runs it once the key is back in the keyring),
        instead of holding an attempt nobody runs until its lease expires."""
        if started.run is None:
            return
        # Refused when another report or the reaper came first.
        await self._store.complete_many(
            [
                Report(
                    started.run.run_id,
                    started.attempt,
                    worker_id,
                    AttemptOutcome.FAILED,
                    False,
                    error.message,
                    call=CallProgress.NOT_BEGUN,
                )
            ]
        )

    async def Heartbeat(
        self, request_iterator: AsyncIterator[pb.HeartbeatRequest], context: Context
    ) -> AsyncIterator[pb.HeartbeatResponse]:
        async for request in request_iterator:
            violations: list[FieldViolation] = []
            worker_id = _read_id(violations, "worker_id", request.worker_id)
            if len(request.attempts) > MAX_ATTEMPTS_PER_BEAT:
                violations.append(
                    FieldViolation("attempts", f"at most {MAX_ATTEMPTS_PER_BEAT} per beat")
                )
            refs: list[AttemptRef] = []
            for i, ref in enumerate(request.attempts[:MAX_ATTEMPTS_PER_BEAT]):
                run_id = _read_run_id(violations, f"attempts[{i}].run_id", ref.run_id)
                if ref.attempt < 1:
                    violations.append(
                        FieldViolation(f"attempts[{i}].attempt", "must be at least 1")
                    )
                call = _read_call(
                    violations, f"attempts[{i}].call_progress", ref.call_progress, beat=True
                )
                refs.append(AttemptRef(run_id, ref.attempt, call))
            _check(violations)
            result = await self._store.heartbeat(worker_id, refs)
            out = pb.HeartbeatResponse()
            datetime_to_timestamp(result.server_time, out.server_time)
            for d in result.directives:
                directive = out.directives.add(
                    attempt=pb.AttemptRef(run_id=str(d.ref.run_id), attempt=d.ref.number),
                    directive=pb.DIRECTIVE_CANCEL if d.cancel else pb.DIRECTIVE_CONTINUE,
                    reason=d.reason,
                )
                if d.lease_expire_time is not None:
                    datetime_to_timestamp(d.lease_expire_time, directive.lease_expire_time)
            yield out

    async def CompleteAttempt(
        self, request: pb.CompleteAttemptRequest, context: Context
    ) -> pb.CompleteAttemptResponse:
        violations: list[FieldViolation] = []
        token = read_attempt_token(violations, context.invocation_metadata())
        report = _read_report(violations, "", request, token)
        _check(violations)
        assert report is not None
        with rpc_span("complete attempt", context.invocation_metadata()) as span:
            span.set_attributes(
                {RUN_ID: request.run_id, ATTEMPT: token, "duetime.result": report.outcome.value}
            )
            (result,) = await self._store.complete_many([report])
            if isinstance(result, DuetimeError):
                raise result
            span.set_attribute("duetime.run_state", result.run_state.value)
        out = pb.CompleteAttemptResponse(run_state=f"RUN_STATE_{result.run_state.value}")
        if result.next_attempt_time is not None:
            datetime_to_timestamp(result.next_attempt_time, out.next_attempt_time)
        return out

    async def StartAttempts(
        self, request: pb.StartAttemptsRequest, context: Context
    ) -> pb.StartAttemptsResponse:
        _check_batch("starts", len(request.starts))
        # Filled in place: results given as a keyword are copied once more.
        answer_batch = pb.StartAttemptsResponse()
        results = [answer_batch.results.add() for _ in request.starts]
        valid: list[tuple[int, StartRequest]] = []
        for i, start in enumerate(request.starts):
            violations: list[FieldViolation] = []
            read = _read_start(violations, f"starts[{i}].", start)
            if violations:
                results[i].error.CopyFrom(entry_error(InvalidArgument(violations)))
            else:
                valid.append((i, read))
        # Each entry's span in its run's trace, as its own StartAttempt would have made.
        spans = [
            start_entry_span(
                "start attempt", request.starts[i].traceparent, {RUN_ID: request.starts[i].run_id}
            )
            for i, _ in valid
        ]
        answers = await self._store.start_many([r for _, r in valid])
        for (i, _), answer, span in zip(valid, answers, spans, strict=True):
            if isinstance(answer, DuetimeError):
                results[i].error.CopyFrom(entry_error(answer))
                _end_failed(span, answer)
            else:
                try:
                    results[i].response.CopyFrom(encode_start(answer, self._secrets))
                except SecretUnreadable as error:
                    await self._end_unreadable(answer, request.starts[i].worker_id, error)
                    results[i].error.CopyFrom(entry_error(error))
                    _end_failed(span, error)
                    continue
                if span is not None:
                    span.set_attributes(
                        {ATTEMPT: answer.attempt, "duetime.decision": answer.answer.value}
                    )
                    span.end()
        return answer_batch

    async def CompleteAttempts(
        self, request: pb.CompleteAttemptsRequest, context: Context
    ) -> pb.CompleteAttemptsResponse:
        _check_batch("reports", len(request.reports))
        answer_batch = pb.CompleteAttemptsResponse()  # filled in place, as StartAttempts'
        results = [answer_batch.results.add() for _ in request.reports]
        valid: list[tuple[int, Report]] = []
        for i, entry in enumerate(request.reports):
            violations: list[FieldViolation] = []
            if not 1 <= entry.attempt <= MAX_ATTEMPT_NUMBER:
                violations.append(
                    FieldViolation(f"reports[{i}].attempt", "must be a positive attempt number")
                )
            report = _read_report(violations, f"reports[{i}].report.", entry.report, entry.attempt)
            if violations or report is None:
                results[i].error.CopyFrom(entry_error(InvalidArgument(violations)))
                continue
            valid.append((i, report))
        spans = [
            start_entry_span(
                "complete attempt",
                request.reports[i].traceparent,
                {RUN_ID: request.reports[i].report.run_id, ATTEMPT: r.attempt},
            )
            for i, r in valid
        ]
        answers = await self._store.complete_many([r for _, r in valid])
        for (i, asked), answer, span in zip(valid, answers, spans, strict=True):
            if isinstance(answer, DuetimeError):
                results[i].error.CopyFrom(entry_error(answer))
                _end_failed(span, answer)
                continue
            if span is not None:
                span.set_attributes(
                    {
                        "duetime.result": asked.outcome.value,
                        "duetime.run_state": answer.run_state.value,
                    }
                )
                span.end()
            out = results[i].response
            out.run_state = f"RUN_STATE_{answer.run_state.value}"
            if answer.next_attempt_time is not None:
                datetime_to_timestamp(answer.next_attempt_time, out.next_attempt_time)
        return answer_batch
