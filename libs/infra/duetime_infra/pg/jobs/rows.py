"""Database rows to domain records."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import asyncpg

from duetime_core.history import ChangeKind, JobPause, VersionChange, VersionRecord
from duetime_core.identity import Principal, Role
from duetime_core.jobspec import JobState
from duetime_core.records import (
    AttemptOutcome,
    AttemptRecord,
    JobRecord,
    RunReason,
    RunRecord,
    RunState,
)
from duetime_core.runkey import RunKey
from duetime_infra.codec.spec_json import spec_from_json
from duetime_infra.tracecontext import read_trace, trace_id_of

Row = asyncpg.Record


def _author(row: Row, prefix: str, team_id: str | None) -> Principal | None:
    """The token a change was made with, from ``{prefix}token_id`` and its description."""
    token_id = row[f"{prefix}token_id"]
    if token_id is None:
        return None
    return Principal(Role.TEAM, team_id, token_id, row[f"{prefix}token_description"] or "")


def _pause(row: Row) -> JobPause | None:
    """A paused job's note, author and call time (None for a job in another state, or one
    paused by a build that kept none of them)."""
    if row["state"] != JobState.PAUSED or row["pause_request_time"] is None:
        return None
    by = _author(row, "pause_", row["team_id"])
    return JobPause(row["pause_note"], by, row["pause_request_time"])


def version_from_row(job_id: uuid.UUID, team_id: str, row: Row) -> VersionRecord:
    change = None
    if row["change"] is not None:
        change = VersionChange(
            ChangeKind(row["change"]),
            _author(row, "", team_id),
            tuple(row["changed_fields"] or ()),
            row["note"] or "",
        )
    return VersionRecord(
        job_id=job_id,
        version=row["version"],
        spec=spec_from_json(row["spec"]),
        create_time=row["create_time"],
        change=change,
    )


def job_from_row(row: Row) -> JobRecord:
    return JobRecord(
        job_id=row["job_id"],
        team_id=row["team_id"],
        partition=row["partition"],
        state=JobState(row["state"]),
        state_reason=row["state_reason"],
        spec=spec_from_json(row["spec"]),
        next_run_time=row["next_run_time"],
        next_effective_time=row["next_effective_time"],
        create_time=row["create_time"],
        update_time=row["update_time"],
        version=row["version"],
        pause_time=row["pause_time"],
        pause=_pause(row),
        scheduled_runs=row["scheduled_runs"],
        last_scheduled_time=row["last_scheduled_time"],
    )


def attempt_from_row(row: Row) -> AttemptRecord:
    return AttemptRecord(
        number=row["number"],
        worker_id=row["worker_id"],
        start_time=row["start_time"],
        lease_expire_time=row["lease_expire_time"],
        end_time=row["end_time"],
        outcome=AttemptOutcome(row["outcome"]) if row["outcome"] else None,
        error=row["error"],
    )


def run_from_row(row: Row, attempts: Iterable[Row] = ()) -> RunRecord:
    """The run as stored, or as readers see it where the query says (``shown_state``): one
    started ahead and not called yet is QUEUED, and its first start has not happened."""
    shown = row.get("shown_state")
    waiting_for_its_call = shown == RunState.QUEUED and row["state"] == RunState.RUNNING
    return RunRecord(
        run_id=row["run_id"],
        key=RunKey(row["job_id"], row["nominal_time"], row["origin"]),
        team_id=row["team_id"],
        effective_time=row["effective_time"],
        state=RunState(shown or row["state"]),
        reason=RunReason(row["reason"]),
        reason_detail=row["reason_detail"],
        attempt=row["attempt"],
        next_attempt_time=row["next_attempt_time"],
        first_start_time=None if waiting_for_its_call else row["first_start_time"],
        range_end_time=row["range_end_time"],
        occurrence_count=row["occurrence_count"],
        trace_id=trace_id_of(read_trace(row["trace_context"], row["traceparent"], row["run_id"])),
        create_time=row["create_time"],
        update_time=row["update_time"],
        attempts=tuple(attempt_from_row(a) for a in attempts),
        quota_release_time=row["eligible_time"],
        quota_limit=row["quota_limit"],
    )
