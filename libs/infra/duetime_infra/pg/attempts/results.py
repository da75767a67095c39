"""What the attempt store is asked and what it answers: starts, reports and heartbeats."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeAlias

import asyncpg

from duetime_core.attempts import CallProgress
from duetime_core.jobspec import CallSigning, JobSpec
from duetime_core.records import AttemptOutcome, RunState
from duetime_core.runkey import RunKey

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"
Rand = Callable[[], float]


@dataclass(frozen=True)
class StartRequest:
    run_id: uuid.UUID
    delivery_id: str
    worker_id: str
    # The worker can hold an attempt started ahead of its run's time.
    early: bool = False
    # The run's nominal time as the worker says it (None: not said). Unused here: the lock
    # finds the run by id (bounded by this time, it planned badly for a herd of one time).
    nominal_time: datetime | None = None


@dataclass(frozen=True)
class Report:
    run_id: uuid.UUID
    # The fencing token: the attempt the report is about.
    attempt: int
    worker_id: str
    outcome: AttemptOutcome
    retryable: bool
    error: str
    # When the call began (the start of an attempt started ahead of its time).
    call_time: datetime | None = None
    # How far the call got, as the report says (None: not said).
    call: CallProgress | None = None
    # The run's nominal time as the worker says it (None: not said); unused here, as
    # ``StartRequest.nominal_time``.
    nominal_time: datetime | None = None


class StartAnswer(enum.Enum):
    STARTED = "STARTED"
    TOO_EARLY = "TOO_EARLY"
    REFUSED = "REFUSED"


@dataclass(frozen=True)
class RunToExecute:
    """The frozen definition of a started run, as the worker needs it."""

    run_id: uuid.UUID
    key: RunKey
    team_id: str
    effective_time: datetime
    snapshot: JobSpec
    traceparent: str
    # The team's default_call_signing as the run starts: what a job that does not say follows.
    team_signing: CallSigning = CallSigning.OFF
    # The team's active signing keys as the run starts: the only ones its call may be signed
    # with (a key revoked before is never used, even from a worker's kept keys).
    team_key_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class StartResult:
    answer: StartAnswer
    server_time: datetime
    # The run's effective time; for TOO_EARLY, when to ask again.
    effective_time: datetime | None = None
    attempt: int = 0
    lease_expire_time: datetime | None = None
    run: RunToExecute | None = None
    refusal: str = ""
    # STARTED ahead of the run's time: when the worker may call (None: now).
    call_time: datetime | None = None

    @classmethod
    def refused(
        cls, now: datetime, refusal: str, effective_time: datetime | None = None
    ) -> StartResult:
        return cls(StartAnswer.REFUSED, now, effective_time=effective_time, refusal=refusal)

    @classmethod
    def too_early(cls, now: datetime, until: datetime | None) -> StartResult:
        return cls(StartAnswer.TOO_EARLY, now, effective_time=until)


@dataclass(frozen=True)
class CompleteResult:
    run_state: RunState
    next_attempt_time: datetime | None


@dataclass(frozen=True)
class AttemptRef:
    run_id: uuid.UUID
    number: int
    # How far its call got, as a heartbeat says (None: not said).
    call: CallProgress | None = None
    # The run's nominal time as the worker says it (None: not said), which finds its rows in
    # one partition; a wrong one is answered the same, only slower.
    nominal_time: datetime | None = None


@dataclass(frozen=True)
class Directive:
    ref: AttemptRef
    cancel: bool
    lease_expire_time: datetime | None  # for a continue
    reason: str = ""  # for a cancel: ATTEMPT_CLOSED, SUPERSEDED, JOB_DELETED


@dataclass(frozen=True)
class HeartbeatResult:
    server_time: datetime
    directives: list[Directive]
