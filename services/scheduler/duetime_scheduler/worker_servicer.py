"""WorkerService over gRPC: read the request, call the attempt store, encode the answer
(``infra/codec/worker_codec``).

Starts and reports go one way, as batches: StartAttempt and CompleteAttempt are deprecated
aliases that answer a batch of one, its entry's error raised as the call's status. Bad input
is INVALID_ARGUMENT with every bad field named at once. A started run's secrets are opened
here, in the answer that hands the run to its worker, and nowhere else.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from grpc import aio
from opentelemetry.trace import Span, Status, StatusCode

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_core.attempts import MAX_ATTEMPTS_PER_BEAT, CallProgress
from duetime_core.errors import DuetimeError, FieldViolation, InvalidArgument, PermissionDenied
from duetime_core.records import AttemptOutcome
from duetime_core.teams import team_id_problem
from duetime_infra.codec.target_codec import SIGNING_NUMBERS
from duetime_infra.codec.timeconv import datetime_to_timestamp
from duetime_infra.codec.worker_codec import (
    check,
    check_batch,
    encode_complete,
    encode_start,
    entry_error,
    read_batch_report,
    read_beat_ref,
    read_id,
    read_incarnation,
    read_run_id,
    read_single_report,
    read_start,
)
from duetime_infra.grpc.auth import current_principal
from duetime_infra.pg.attempts.results import (
    CompleteResult,
    Report,
    StartRequest,
    StartResult,
)
from duetime_infra.pg.attempts.store import AttemptStore
from duetime_infra.pg.teams.signing_keys import signing_for_run
from duetime_infra.secrets.sealing import SecretBox, SecretUnreadable
from duetime_infra.telemetry import instruments
from duetime_infra.tracecontext import ATTEMPT, RUN_ID, rpc_traceparent, start_entry_span

Context = aio.ServicerContext[Any, Any]

log = logging.getLogger(__name__)


class WorkerServicer(worker_service_pb2_grpc.WorkerServiceServicer):
    def __init__(self, store: AttemptStore, secrets: SecretBox) -> None:
        self._store = store
        self._secrets = secrets

    async def GetSigningKeys(
        self, request: pb.GetSigningKeysRequest, context: Context
    ) -> pb.GetSigningKeysResponse:
        """The team's signing keys, opened here, as job secrets are, for a worker that holds a
        run of the team (``signing_for_run``); each fetch is logged and counted, its secrets
        never."""
        violations: list[FieldViolation] = []
        if team_id_problem(request.team) is not None:
            violations.append(FieldViolation("team", "must be a team id"))
        # Required: a worker older than this rule, which names no run, is refused here.
        run_id = read_run_id(violations, "run_id", request.run_id)
        worker_id = read_id(violations, "worker_id", request.worker_id)
        check(violations)
        _raise_if_unbound(worker_id, "worker_id")
        facts = {"worker_id": worker_id, "team": request.team, "run_id": str(run_id)}
        try:
            found = await signing_for_run(
                self._store.pool, self._secrets, request.team, run_id, worker_id
            )
        except PermissionDenied as error:
            instruments.signing_keys_fetched("refused")
            log.warning(
                "signing keys refused",
                extra={"action": "signing_keys_refused", "why": error.message, **facts},
            )
            raise
        instruments.signing_keys_fetched("served")
        log.info(
            "signing keys served",
            extra={
                "action": "signing_keys_served",
                "key_ids": [key.key_id for key in found.keys],
                **facts,
            },
        )
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
        """Deprecated alias of StartAttempts: a batch of one, its entry's error the status."""
        traceparent = rpc_traceparent(context.invocation_metadata())
        (answer,) = await self._starts([(request, "", traceparent)])
        return _single(answer)

    async def StartAttempts(
        self, request: pb.StartAttemptsRequest, context: Context
    ) -> pb.StartAttemptsResponse:
        check_batch("starts", len(request.starts))
        answers = await self._starts(
            [(start, f"starts[{i}].", start.traceparent) for i, start in enumerate(request.starts)]
        )
        out = pb.StartAttemptsResponse()
        _fill_results(out.results.add, answers)
        return out

    async def _starts(
        self, entries: Sequence[tuple[pb.StartAttemptRequest, str, str]]
    ) -> list[pb.StartAttemptResponse | DuetimeError]:
        """Each start (its request, field prefix and traceparent) answered in order, in the
        span of its run's trace."""
        answers: list[pb.StartAttemptResponse | DuetimeError] = []
        valid: list[tuple[int, StartRequest]] = []
        for i, (start, prefix, _) in enumerate(entries):
            violations: list[FieldViolation] = []
            read = read_start(violations, prefix, start)
            refused: DuetimeError | None = (
                InvalidArgument(violations) if violations else _unbound(read.worker_id, prefix)
            )
            answers.append(refused or pb.StartAttemptResponse())
            if refused is None:
                valid.append((i, read))
        spans = [
            start_entry_span("start attempt", entries[i][2], {RUN_ID: entries[i][0].run_id})
            for i, _ in valid
        ]
        results = await self._store.start_many([r for _, r in valid])
        for (i, read), result, span in zip(valid, results, spans, strict=True):
            answers[i] = await self._encode_start(result, read.worker_id)
            if span is not None:
                _end_span(span, answers[i], _start_attributes(result))
        return answers

    async def _encode_start(
        self, result: StartResult | DuetimeError, worker_id: str
    ) -> pb.StartAttemptResponse | DuetimeError:
        """The answer to a start, with the run's secrets opened; a run whose secrets this
        scheduler cannot open ends at once, failed without a retry (its team is alerted; a
        redrive runs it once the key is back in the keyring), instead of holding an attempt
        nobody runs until its lease expires."""
        if isinstance(result, DuetimeError):
            return result
        try:
            return encode_start(result, self._secrets)
        except SecretUnreadable as error:
            if result.run is not None:  # refused when another report or the reaper came first
                unrun = Report(
                    result.run.run_id,
                    result.attempt,
                    worker_id,
                    AttemptOutcome.FAILED,
                    False,
                    error.message,
                    call=CallProgress.NOT_BEGUN,
                )
                await self._store.complete_many([unrun])
            return error

    async def Heartbeat(
        self, request_iterator: AsyncIterator[pb.HeartbeatRequest], context: Context
    ) -> AsyncIterator[pb.HeartbeatResponse]:
        async for request in request_iterator:
            violations: list[FieldViolation] = []
            worker_id = read_id(violations, "worker_id", request.worker_id)
            if len(request.attempts) > MAX_ATTEMPTS_PER_BEAT:
                violations.append(
                    FieldViolation("attempts", f"at most {MAX_ATTEMPTS_PER_BEAT} per beat")
                )
            refs = [
                read_beat_ref(violations, i, ref)
                for i, ref in enumerate(request.attempts[:MAX_ATTEMPTS_PER_BEAT])
            ]
            incarnation = read_incarnation(violations, request.incarnation)
            check(violations)
            _raise_if_unbound(worker_id, "worker_id")
            result = await self._store.heartbeat(worker_id, refs, incarnation)
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
        """Deprecated alias of CompleteAttempts: a batch of one whose fencing token is read
        from ``duetime-attempt`` metadata (checked by the same compare-and-set), its entry's
        error the status."""
        metadata = context.invocation_metadata()
        violations: list[FieldViolation] = []
        report = read_single_report(violations, request, metadata)
        (answer,) = await self._reports([(violations, report, rpc_traceparent(metadata), "")])
        return _single(answer)

    async def CompleteAttempts(
        self, request: pb.CompleteAttemptsRequest, context: Context
    ) -> pb.CompleteAttemptsResponse:
        check_batch("reports", len(request.reports))
        read: list[tuple[list[FieldViolation], Report | None, str, str]] = []
        for i, entry in enumerate(request.reports):
            violations: list[FieldViolation] = []
            report = read_batch_report(violations, i, entry)
            read.append((violations, report, entry.traceparent, f"reports[{i}].report."))
        answers = await self._reports(read)
        out = pb.CompleteAttemptsResponse()
        _fill_results(out.results.add, answers)
        return out

    async def _reports(
        self, entries: Sequence[tuple[list[FieldViolation], Report | None, str, str]]
    ) -> list[pb.CompleteAttemptResponse | DuetimeError]:
        """Each report (as read, with its violations, traceparent and field prefix) answered in
        order, in the span of its run's trace."""
        answers: list[pb.CompleteAttemptResponse | DuetimeError] = []
        valid: list[tuple[int, Report]] = []
        for i, (violations, report, _, prefix) in enumerate(entries):
            if violations or report is None:
                answers.append(InvalidArgument(violations))
            elif (refused := _unbound(report.worker_id, prefix)) is not None:
                answers.append(refused)
            else:
                answers.append(pb.CompleteAttemptResponse())
                valid.append((i, report))
        spans = [
            start_entry_span(
                "complete attempt", entries[i][2], {RUN_ID: str(r.run_id), ATTEMPT: r.attempt}
            )
            for i, r in valid
        ]
        results = await self._store.complete_many([r for _, r in valid])
        for (i, report), result, span in zip(valid, results, spans, strict=True):
            answers[i] = result if isinstance(result, DuetimeError) else encode_complete(result)
            if span is not None:
                _end_span(span, answers[i], _report_attributes(report, result))
        return answers


def _unbound(worker_id: str, prefix: str) -> PermissionDenied | None:
    """The refusal of a worker id the caller's worker token is not bound to (None: it is)."""
    principal = current_principal()
    if principal.acts_for_worker(worker_id):
        return None
    field = f"{prefix}worker_id"
    return PermissionDenied(
        f"{field} {worker_id!r}: this worker token acts only for worker ids beginning with "
        f"{principal.worker_id_prefix!r}",
        reason="WORKER_ID_NOT_BOUND",
        metadata={"field": field},
    )


def _raise_if_unbound(worker_id: str, field: str) -> None:
    refused = _unbound(worker_id, field.removesuffix("worker_id"))
    if refused is not None:
        raise refused


_Answer = TypeVar("_Answer", pb.StartAttemptResponse, pb.CompleteAttemptResponse)
_Answer_co = TypeVar("_Answer_co", covariant=True)


class _Result(Protocol[_Answer_co]):
    """An entry of a batch's results: its answer, or the error that answers it."""

    @property
    def response(self) -> _Answer_co: ...

    @property
    def error(self) -> pb.EntryError: ...


def _fill_results(
    add: Callable[[], _Result[_Answer]], answers: Sequence[_Answer | DuetimeError]
) -> None:
    """Adds an entry for each answer, in order, filled in place (results given to the response
    as a keyword are copied once more)."""
    for answer in answers:
        result = add()
        if isinstance(answer, DuetimeError):
            result.error.CopyFrom(entry_error(answer))
        else:
            result.response.CopyFrom(answer)


def _single(answer: _Answer | DuetimeError) -> _Answer:
    """A deprecated single call's answer: its entry's error raised as the call's status."""
    if isinstance(answer, DuetimeError):
        raise answer
    return answer


def _start_attributes(result: StartResult | DuetimeError) -> dict[str, str | int]:
    if isinstance(result, DuetimeError):
        return {}
    return {ATTEMPT: result.attempt, "duetime.decision": result.answer.value}


def _report_attributes(
    report: Report, result: CompleteResult | DuetimeError
) -> dict[str, str | int]:
    if isinstance(result, DuetimeError):
        return {}
    return {"duetime.result": report.outcome.value, "duetime.run_state": result.run_state.value}


def _end_span(span: Span, answer: object, attributes: Mapping[str, str | int]) -> None:
    """Ends an entry's span with the error its entry was answered with, or the attributes of
    its answer."""
    if isinstance(answer, DuetimeError):
        span.set_status(Status(StatusCode.ERROR, f"{answer.code.value}: {answer.reason}"))
    else:
        span.set_attributes(attributes)
    span.end()
