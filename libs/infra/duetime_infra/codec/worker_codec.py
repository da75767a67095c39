"""The worker contract (``duetime.worker.v1``) to the attempt store's requests and answers:
each start and report read with every bad field named (a batch entry's fields placed by its
prefix, ``starts[3].``), and a start's answer encoded with the run's secrets opened."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime

from google.protobuf.timestamp_pb2 import Timestamp

from duetime.jobs.v1 import job_pb2
from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_core.attempts import CallProgress
from duetime_core.errors import DuetimeError, FieldViolation, InvalidArgument
from duetime_core.jobspec import CallSigning
from duetime_infra.codec.attempt_token import MAX_ATTEMPT_NUMBER, read_attempt_token
from duetime_infra.codec.outcome_codec import CALLS, RESULTS
from duetime_infra.codec.policy_codec import DELIVERY_NUMBERS
from duetime_infra.codec.target_codec import encode_target_clear
from duetime_infra.codec.timeconv import (
    datetime_to_timestamp,
    timedelta_to_duration,
    timestamp_to_datetime,
)
from duetime_infra.pg.attempts.results import (
    AttemptRef,
    CompleteResult,
    Report,
    RunToExecute,
    StartAnswer,
    StartRequest,
    StartResult,
)
from duetime_infra.pg.attempts.store import MAX_BATCH
from duetime_infra.secrets.sealing import SecretBox

# A call's gRPC metadata.
Metadata = Iterable[tuple[str, str | bytes]] | None

MAX_ID_LENGTH = 200

_DECISIONS = {
    StartAnswer.STARTED: pb.START_DECISION_STARTED,
    StartAnswer.TOO_EARLY: pb.START_DECISION_TOO_EARLY,
    StartAnswer.REFUSED: pb.START_DECISION_REFUSED,
}


def read_call(
    violations: list[FieldViolation], field: str, value: int, *, beat: bool = False
) -> CallProgress | None:
    """How far a call got (None: unspecified); in a heartbeat, an answer counts as begun (the
    report says the rest)."""
    if value == pb.CALL_PROGRESS_UNSPECIFIED:
        return None
    call = CALLS.get(value)
    if call is None:
        violations.append(FieldViolation(field, f"unknown value {value}"))
    if beat and call is CallProgress.ANSWERED:
        return CallProgress.BEGUN
    return call


def read_run_id(violations: list[FieldViolation], field: str, text: str) -> uuid.UUID:
    if not text:
        violations.append(FieldViolation(field, "required"))
        return uuid.UUID(int=0)
    try:
        return uuid.UUID(text)
    except ValueError:
        violations.append(FieldViolation(field, f"must be a UUID, got {text[:64]!r}"))
        return uuid.UUID(int=0)


# The longest incarnation a beat may name (a worker's are 12 hex digits).
MAX_INCARNATION = 64


def read_incarnation(violations: list[FieldViolation], value: str) -> str:
    """A beat's worker incarnation, as its starts' delivery ids end (``delivery@incarnation``);
    empty: none said."""
    if len(value) > MAX_INCARNATION or "@" in value:
        violations.append(
            FieldViolation("incarnation", f"at most {MAX_INCARNATION} characters, without '@'")
        )
    return value


def read_id(violations: list[FieldViolation], field: str, text: str) -> str:
    if not text:
        violations.append(FieldViolation(field, "required"))
    elif len(text) > MAX_ID_LENGTH:
        violations.append(
            FieldViolation(field, f"at most {MAX_ID_LENGTH} characters, got {len(text)}")
        )
    elif not text.isprintable():
        violations.append(FieldViolation(field, "must not contain control characters"))
    return text


def check(violations: list[FieldViolation]) -> None:
    if violations:
        raise InvalidArgument(violations)


def check_batch(field: str, size: int) -> None:
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
    _resolve_signing(run, out)
    timedelta_to_duration(run.snapshot.attempt_timeout, out.attempt_timeout)
    out.delivery = DELIVERY_NUMBERS[run.snapshot.delivery]
    return out


def _resolve_signing(run: RunToExecute, out: pb.RunSpec) -> None:
    """A call that follows its team's default says OFF when that default is off, so the worker
    neither fetches nor waits for keys it will not use. Under a default that signs, the call
    still says unspecified: the worker, which needs the team's keys then anyway, reads the
    default with them and knows the job did not ask (see ``CallSigner.sign``). A call that may
    be signed names the keys it may be signed with (``RunSpec.signing_keys``)."""
    if not out.target.HasField("http"):
        return
    http = out.target.http
    if http.signing == job_pb2.CALL_SIGNING_UNSPECIFIED and run.team_signing is CallSigning.OFF:
        http.signing = job_pb2.CALL_SIGNING_OFF
    if http.signing != job_pb2.CALL_SIGNING_OFF:
        out.signing_keys.SetInParent()
        out.signing_keys.key_ids.extend(run.team_key_ids)


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


def _read_time(
    violations: list[FieldViolation], field: str, value: Timestamp | None
) -> datetime | None:
    """An optional instant (None when not given); one out of range is a violation."""
    if value is None:
        return None
    try:
        return timestamp_to_datetime(value)
    except ValueError as error:
        violations.append(FieldViolation(field, str(error)))
        return None


def read_beat_ref(violations: list[FieldViolation], i: int, ref: pb.AttemptRef) -> AttemptRef:
    """Attempt ``i`` of a heartbeat: its run, number, call progress and nominal time."""
    prefix = f"attempts[{i}]."
    run_id = read_run_id(violations, f"{prefix}run_id", ref.run_id)
    if ref.attempt < 1:
        violations.append(FieldViolation(f"{prefix}attempt", "must be at least 1"))
    call = read_call(violations, f"{prefix}call_progress", ref.call_progress, beat=True)
    nominal = ref.nominal_time if ref.HasField("nominal_time") else None
    return AttemptRef(
        run_id, ref.attempt, call, _read_time(violations, f"{prefix}nominal_time", nominal)
    )


def read_start(
    violations: list[FieldViolation], prefix: str, request: pb.StartAttemptRequest
) -> StartRequest:
    """One start, as StartAttempt and each entry of StartAttempts read it; ``prefix`` places the
    field paths of a batch entry (``starts[3].``)."""
    nominal = request.nominal_time if request.HasField("nominal_time") else None
    return StartRequest(
        read_run_id(violations, f"{prefix}run_id", request.run_id),
        read_id(violations, f"{prefix}delivery_id", request.delivery_id),
        read_id(violations, f"{prefix}worker_id", request.worker_id),
        request.early,
        _read_time(violations, f"{prefix}nominal_time", nominal),
    )


def read_report(
    violations: list[FieldViolation],
    prefix: str,
    report: pb.CompleteAttemptRequest,
    attempt: int,
) -> Report | None:
    """One report of attempt ``attempt`` (its fencing token, read by the caller), as
    CompleteAttempt and each entry of CompleteAttempts read it; None when its result is missing
    or unknown (a violation says so). ``prefix`` places the field paths of a batch entry."""
    run_id = read_run_id(violations, f"{prefix}run_id", report.run_id)
    worker_id = read_id(violations, f"{prefix}worker_id", report.worker_id)
    outcome = RESULTS.get(report.result)
    if outcome is None:
        problem = "required" if report.result == 0 else f"unknown value {report.result}"
        violations.append(FieldViolation(f"{prefix}result", problem))
    call = read_call(violations, f"{prefix}call_progress", report.call_progress)
    call_time = _read_time(
        violations,
        f"{prefix}call_time",
        report.call_time if report.HasField("call_time") else None,
    )
    nominal_time = _read_time(
        violations,
        f"{prefix}nominal_time",
        report.nominal_time if report.HasField("nominal_time") else None,
    )
    if outcome is None:
        return None
    return Report(
        run_id,
        attempt,
        worker_id,
        outcome,
        report.retryable,
        report.error,
        call_time,
        call,
        nominal_time,
    )


def read_batch_report(
    violations: list[FieldViolation], i: int, entry: pb.AttemptReport
) -> Report | None:
    """Entry ``i`` of CompleteAttempts, its fencing token in the entry (``attempt``)."""
    if not 1 <= entry.attempt <= MAX_ATTEMPT_NUMBER:
        violations.append(
            FieldViolation(f"reports[{i}].attempt", "must be a positive attempt number")
        )
    return read_report(violations, f"reports[{i}].report.", entry.report, entry.attempt)


def read_single_report(
    violations: list[FieldViolation], request: pb.CompleteAttemptRequest, metadata: Metadata
) -> Report | None:
    """A CompleteAttempt, its fencing token in ``duetime-attempt`` metadata."""
    token = read_attempt_token(violations, metadata)
    return read_report(violations, "", request, token)


def encode_complete(result: CompleteResult) -> pb.CompleteAttemptResponse:
    out = pb.CompleteAttemptResponse(run_state=f"RUN_STATE_{result.run_state.value}")
    if result.next_attempt_time is not None:
        datetime_to_timestamp(result.next_attempt_time, out.next_attempt_time)
    return out
