"""A start's facts and answers: a run's locked row as a start reads it, the core's view of it,
the STARTED answer, and what is counted after COMMIT."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from duetime_core.attempts import StartDecision, StartKind, StartView, run_overlap
from duetime_core.jobspec import CallSigning, JobSpec, OverlapPolicy
from duetime_core.records import RunState
from duetime_core.runkey import SCHEDULE_ORIGIN
from duetime_infra.pg.attempts.outcome import count_first_start
from duetime_infra.pg.attempts.results import RunToExecute, StartAnswer, StartResult
from duetime_infra.pg.dispatch.redispatch import key_of, traceparent_of_run
from duetime_infra.telemetry import instruments


class StartFacts(NamedTuple):
    """A run to start, as ``attempt_batch_runs_lock`` locks it: its row, its open attempt's
    worker, lease and call time (if any), its definition's text, its team's call signing and
    active signing keys, and the database's now."""

    run_id: uuid.UUID
    job_id: uuid.UUID
    job_version: int
    nominal_time: datetime
    origin: str
    team_id: str
    state: str
    attempt: int
    effective_time: datetime
    next_attempt_time: datetime | None
    eligible_time: datetime | None
    priority: str
    traceparent: str
    trace_context: bytes | None
    start_delivery_id: str | None
    spec_text: str
    open_worker_id: str | None
    open_lease_expire_time: datetime | None
    open_call_time: datetime | None
    team_call_signing: str | None
    team_key_ids: list[str]
    now: datetime


# A run the admission check let through: its request's index, locked row, definition, view.
Admitted = tuple[int, StartFacts, JobSpec, StartView]
# A run decided on under its job's lock: its request's index, row, definition, the decision
# and the job's reading of the clock.
Decided = tuple[int, StartFacts, JobSpec, StartDecision, datetime]


def start_view(row: StartFacts, snapshot: JobSpec) -> StartView:
    """What the start decision needs of a run, from its locked row."""
    return StartView(
        state=RunState(row.state),
        scheduled=row.origin == SCHEDULE_ORIGIN,
        nominal_time=row.nominal_time,
        effective_time=row.effective_time,
        next_attempt_time=row.next_attempt_time,
        attempt=row.attempt,
        start_delivery_id=row.start_delivery_id,
        open_attempt_worker=row.open_worker_id,
        misfire=snapshot.misfire,
        overlap=run_overlap(snapshot.overlap, row.origin),
    )


def started_result(
    row: StartFacts,
    snapshot: JobSpec,
    attempt: int,
    lease_expire_time: datetime,
    now: datetime,
    call_time: datetime | None = None,
) -> StartResult:
    return StartResult(
        StartAnswer.STARTED,
        now,
        effective_time=row.effective_time,
        attempt=attempt,
        lease_expire_time=lease_expire_time,
        call_time=call_time,
        run=RunToExecute(
            run_id=row.run_id,
            key=key_of(row),
            team_id=row.team_id,
            effective_time=row.effective_time,
            snapshot=snapshot,
            traceparent=traceparent_of_run(row),
            team_signing=CallSigning(row.team_call_signing or CallSigning.OFF),
            team_key_ids=tuple(row.team_key_ids),
        ),
    )


def decided_in_batch(admitted: Sequence[Admitted]) -> list[Admitted]:
    """The admitted starts a trying pass decides: of a job whose runs here are all under
    OVERLAP_POLICY_ALLOW, every one (no run of the job changes what another's start decides:
    a herd's or a backfill's many runs of one job start together); of any other job, its
    earliest. Its later runs wait and see it started, as they would one by one (with
    BUFFER_ONE or CANCEL_PREVIOUS a later run started first would hold back or supersede an
    earlier one)."""
    by_job: dict[uuid.UUID, list[Admitted]] = {}
    for entry in sorted(admitted, key=lambda entry: entry[1].nominal_time):
        by_job.setdefault(entry[1].job_id, []).append(entry)
    deciding: list[Admitted] = []
    for entries in by_job.values():
        if all(view.overlap is OverlapPolicy.ALLOW for _, _, _, view in entries):
            deciding += entries
        else:
            deciding.append(entries[0])
    return deciding


def writes_beyond_the_batch(decision: StartDecision) -> bool:
    """A decision that changes rows the pass did not lock itself: left to a waiting pass."""
    return decision.kind is StartKind.SUPERSEDE or decision.outcome is not None


def count_start(row: StartFacts, decision: StartDecision, result: StartResult) -> None:
    """After COMMIT: a first attempt's start lateness (an attempt started ahead of its time is
    counted when its call's start is reported), or the final state a refusal left the run in."""
    if result.answer is StartAnswer.STARTED:
        if result.attempt == 1 and result.call_time is None:
            count_first_start(row, result.server_time)
    elif decision.outcome is not None and decision.outcome.final:
        instruments.runs_finished(decision.outcome.state.value, decision.outcome.reason.value)
