"""Stored records as the domain sees them: plain data, no I/O."""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from duetime_core.history import JobPause
from duetime_core.jobspec import JobSpec, JobState
from duetime_core.runkey import RunKey


class RunState(enum.StrEnum):
    QUEUED = "QUEUED"
    WAITING = "WAITING"
    RUNNING = "RUNNING"
    RETRY_WAIT = "RETRY_WAIT"
    SUCCEEDED = "SUCCEEDED"
    DEAD_LETTERED = "DEAD_LETTERED"
    MISSED = "MISSED"
    SKIPPED = "SKIPPED"
    CANCELLED = "CANCELLED"


class RunReason(enum.StrEnum):
    NONE = ""
    MISFIRE = "MISFIRE"
    OVERLAP = "OVERLAP"
    JOB_PAUSED = "JOB_PAUSED"
    DST_GAP = "DST_GAP"
    JOB_DELETED = "JOB_DELETED"
    ATTEMPTS_EXHAUSTED = "ATTEMPTS_EXHAUSTED"
    NON_RETRYABLE = "NON_RETRYABLE"
    SUPERSEDED = "SUPERSEDED"
    QUOTA = "QUOTA"
    JOB_UPDATED = "JOB_UPDATED"
    FAIR_SHARE = "FAIR_SHARE"
    OUTCOME_UNKNOWN = "OUTCOME_UNKNOWN"
    BACKFILL_TURN = "BACKFILL_TURN"
    CALENDAR = "CALENDAR"


class AttemptOutcome(enum.StrEnum):
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"
    LEASE_EXPIRED = "LEASE_EXPIRED"
    CANCELLED = "CANCELLED"
    # Given back unfinished by a worker that stopped; not counted against the retry budget.
    HANDED_BACK = "HANDED_BACK"


@dataclass(frozen=True)
class JobRecord:
    job_id: uuid.UUID
    team_id: str
    partition: int
    state: JobState
    state_reason: str
    spec: JobSpec
    next_run_time: datetime | None
    next_effective_time: datetime | None
    create_time: datetime
    update_time: datetime
    version: int
    # Where a paused stretch began: the pending occurrence when it was paused.
    pause_time: datetime | None = None
    # A paused job's note, author and pause call time.
    pause: JobPause | None = None
    # The runs its schedule made, what max_runs counts (``duetime_core.ending``), and the time
    # of the latest of them (None: none yet).
    scheduled_runs: int = 0
    last_scheduled_time: datetime | None = None

    @property
    def etag(self) -> str:
        return f'W/"{self.version}"'


@dataclass(frozen=True)
class AttemptRecord:
    number: int
    worker_id: str
    start_time: datetime
    lease_expire_time: datetime
    end_time: datetime | None
    outcome: AttemptOutcome | None
    error: str


@dataclass(frozen=True)
class RunRecord:
    run_id: uuid.UUID
    key: RunKey
    team_id: str
    effective_time: datetime
    state: RunState
    reason: RunReason
    reason_detail: str
    attempt: int
    next_attempt_time: datetime | None
    first_start_time: datetime | None
    range_end_time: datetime | None
    occurrence_count: int
    trace_id: str
    create_time: datetime
    update_time: datetime
    attempts: tuple[AttemptRecord, ...] = ()
    # When its team's quota let the run go (None: it did not hold it; eligible from the
    # effective time), and which limit held it ("" none).
    quota_release_time: datetime | None = None
    quota_limit: str = ""

    @property
    def start_lateness(self) -> timedelta | None:
        if self.first_start_time is None:
            return None
        return self.first_start_time - self.effective_time

    @property
    def eligible_time(self) -> datetime:
        """From when the run could start as far as its team's quota goes."""
        if self.quota_release_time is None or self.quota_release_time < self.effective_time:
            return self.effective_time
        return self.quota_release_time

    @property
    def quota_delay(self) -> timedelta:
        """How long the team's own quota held the run back."""
        return self.eligible_time - self.effective_time
