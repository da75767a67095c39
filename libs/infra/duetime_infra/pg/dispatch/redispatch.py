"""A new dispatch message for a stored run going (back) to QUEUED, and what it is made of.

The queries that end or dispatch runs each turn their rows into a typed row of their own; these
protocols say what of a run's row the key and a dispatch message read, whichever query it came
from."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Protocol

from duetime_core.jobspec import Priority
from duetime_core.runkey import RunKey
from duetime_infra.dispatch import OutboxRow, dispatch_row, overlap_of_spec, target_kind_of_spec
from duetime_infra.tracecontext import read_trace


class StoredRun(Protocol):
    """A run as its row in ``runs`` has it: its key, team, time, priority and trace context."""

    @property
    def run_id(self) -> uuid.UUID: ...
    @property
    def job_id(self) -> uuid.UUID: ...
    @property
    def nominal_time(self) -> datetime: ...
    @property
    def origin(self) -> str: ...
    @property
    def team_id(self) -> str: ...
    @property
    def effective_time(self) -> datetime: ...
    @property
    def priority(self) -> str: ...
    @property
    def traceparent(self) -> str: ...
    @property
    def trace_context(self) -> bytes | None: ...


class Redispatchable(StoredRun, Protocol):
    """A stored run with its job version's target kind (``spec->'target'->>'kind'``) and
    overlap policy (``spec->>'overlap' AS job_overlap``)."""

    @property
    def target_kind(self) -> str | None: ...
    @property
    def job_overlap(self) -> str | None: ...


def key_of(row: StoredRun) -> RunKey:
    return RunKey(row.job_id, row.nominal_time, row.origin)


def traceparent_of_run(row: StoredRun) -> str:
    """The run's W3C traceparent, from the columns its row keeps it in (schema 28, 31)."""
    return read_trace(row.trace_context, row.traceparent, row.run_id)


def redispatch_row(row: Redispatchable, now: datetime, *, team_weight: int = 1) -> OutboxRow:
    """A new dispatch message for a run going back to QUEUED (retry, release, hand-back,
    reconciler). ``row.target_kind`` is needed: a container dispatch without it would be started
    without the launcher's permit reserved, and handed back 'launcher busy' (spending a free
    hand-back) when every permit is taken. ``row.job_overlap`` spares a run that starts at its
    time the worker's ask ahead."""
    return dispatch_row(
        run_id=row.run_id,
        key=key_of(row),
        team_id=row.team_id,
        effective_time=row.effective_time,
        priority=Priority(row.priority),
        traceparent=traceparent_of_run(row),
        now=now,
        kind=target_kind_of_spec(row.target_kind),
        team_weight=team_weight,
        overlap=overlap_of_spec(row.job_overlap),
    )
