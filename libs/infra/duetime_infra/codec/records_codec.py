"""Stored records to their public messages (Job with its pause, Run, Attempt), secrets
redacted."""

from __future__ import annotations

from duetime.jobs.v1 import job_pb2, run_pb2
from duetime_core.history import JobPause
from duetime_core.identity import Principal
from duetime_core.records import AttemptRecord, JobRecord, RunReason, RunRecord
from duetime_core.runkey import RunKey
from duetime_infra.codec.job_codec import encode_job_spec
from duetime_infra.codec.timeconv import datetime_to_timestamp, timedelta_to_duration


def job_name(team_id: str, job_id: object) -> str:
    return f"teams/{team_id}/jobs/{job_id}"


def run_name(team_id: str, job_id: object, run_id: object) -> str:
    return f"{job_name(team_id, job_id)}/runs/{run_id}"


def encode_principal(by: Principal, out: job_pb2.Principal) -> None:
    out.token = f"tokens/{by.token_id}"
    out.description = by.description


def _encode_pause(pause: JobPause, out: job_pb2.JobPause) -> None:
    out.note = pause.note
    if pause.by is not None:
        encode_principal(pause.by, out.principal)
    if pause.time is not None:
        datetime_to_timestamp(pause.time, out.pause_time)


def encode_job(record: JobRecord) -> job_pb2.Job:
    out = job_pb2.Job(
        name=job_name(record.team_id, record.job_id),
        job_id=str(record.job_id),
        team=record.team_id,
        state=job_pb2.JobState.Value(f"JOB_STATE_{record.state.value}"),
        state_reason=record.state_reason,
        etag=record.etag,
        scheduled_runs=record.scheduled_runs,
    )
    encode_job_spec(record.spec, out)
    if record.next_run_time is not None:
        datetime_to_timestamp(record.next_run_time, out.next_run_time)
    datetime_to_timestamp(record.create_time, out.create_time)
    datetime_to_timestamp(record.update_time, out.update_time)
    if record.pause is not None:
        _encode_pause(record.pause, out.pause)
    return out


def _encode_attempt(attempt: AttemptRecord) -> run_pb2.Attempt:
    out = run_pb2.Attempt(number=attempt.number, error=attempt.error, worker=attempt.worker_id)
    datetime_to_timestamp(attempt.start_time, out.start_time)
    if attempt.end_time is not None:
        datetime_to_timestamp(attempt.end_time, out.end_time)
    else:
        datetime_to_timestamp(attempt.lease_expire_time, out.lease_expire_time)
    if attempt.outcome is not None:
        out.outcome = run_pb2.AttemptOutcome.Value(f"ATTEMPT_OUTCOME_{attempt.outcome.value}")
    return out


def _origin(key: RunKey) -> run_pb2.RunOrigin.ValueType:
    if key.trigger_request_id is not None:
        return run_pb2.RUN_ORIGIN_TRIGGER
    if key.backfill_request_id is not None:
        return run_pb2.RUN_ORIGIN_BACKFILL
    return run_pb2.RUN_ORIGIN_SCHEDULE


def encode_run(record: RunRecord) -> run_pb2.Run:
    key = record.key
    out = run_pb2.Run(
        name=run_name(record.team_id, key.job_id, record.run_id),
        run_id=str(record.run_id),
        job_id=str(key.job_id),
        origin=_origin(key),
        trigger_request_id=key.trigger_request_id or "",
        backfill_request_id=key.backfill_request_id or "",
        idempotency_key=key.canonical(),
        state=run_pb2.RunState.Value(f"RUN_STATE_{record.state.value}"),
        reason_detail=record.reason_detail,
        attempt=record.attempt,
        attempts=[_encode_attempt(a) for a in record.attempts],
        trace_id=record.trace_id,
        occurrence_count=record.occurrence_count,
    )
    if record.reason is not RunReason.NONE:
        out.reason = run_pb2.RunReason.Value(f"RUN_REASON_{record.reason.value}")
    datetime_to_timestamp(key.nominal_time, out.nominal_time)
    datetime_to_timestamp(record.effective_time, out.effective_time)
    lateness = record.start_lateness
    if lateness is not None:
        timedelta_to_duration(lateness, out.start_lateness)
    if record.next_attempt_time is not None:
        datetime_to_timestamp(record.next_attempt_time, out.next_attempt_time)
    if record.range_end_time is not None:
        datetime_to_timestamp(record.range_end_time, out.range_end_time)
    datetime_to_timestamp(record.create_time, out.create_time)
    datetime_to_timestamp(record.update_time, out.update_time)
    datetime_to_timestamp(record.eligible_time, out.eligible_time)
    timedelta_to_duration(record.quota_delay, out.quota_delay)
    if record.quota_limit:
        out.quota_limit = run_pb2.QuotaLimit.Value(f"QUOTA_LIMIT_{record.quota_limit}")
    return out
