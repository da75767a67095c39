"""The outbox row that hands a run to dispatch: a RunDispatch on its priority's topic."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from duetime.events.v1 import events_pb2
from duetime_core.attempts import may_start_ahead, run_overlap
from duetime_core.jobspec import ContainerTarget, HttpTarget, OverlapPolicy, Priority, Target
from duetime_core.runkey import RunKey
from duetime_infra.codec.timeconv import datetime_to_timestamp as to_timestamp
from duetime_infra.kafka.topics import DISPATCH_TOPICS

_PRIORITY_PB = {
    Priority.HIGH: 1,
    Priority.NORMAL: 2,
    Priority.LOW: 3,
}


def target_kind(target: Target | None) -> events_pb2.TargetKind.ValueType:
    """The dispatch message's kind of ``target``; unspecified when the writer does not know."""
    if isinstance(target, HttpTarget):
        return events_pb2.TARGET_KIND_HTTP
    if isinstance(target, ContainerTarget):
        return events_pb2.TARGET_KIND_CONTAINER
    return events_pb2.TARGET_KIND_UNSPECIFIED


# The target's "kind" in a stored job spec (spec_json), as the dispatch message carries it.
_KIND_OF_SPEC = {
    "http": events_pb2.TARGET_KIND_HTTP,
    "container": events_pb2.TARGET_KIND_CONTAINER,
}


def target_kind_of_spec(kind: str | None) -> events_pb2.TargetKind.ValueType:
    """The dispatch message's kind for a stored spec's target kind (SQL reads it as
    ``spec->'target'->>'kind'``, cheaper than the whole spec); unspecified when unknown."""
    return _KIND_OF_SPEC.get(kind or "", events_pb2.TARGET_KIND_UNSPECIFIED)


def overlap_of_spec(overlap: str | None) -> OverlapPolicy | None:
    """A stored spec's overlap policy as SQL reads it (``spec->>'overlap'``); None when the
    spec does not say or says what this build does not know."""
    try:
        return OverlapPolicy(overlap) if overlap else None
    except ValueError:
        return None


@dataclass(frozen=True)
class OutboxRow:
    topic: str
    key: bytes
    payload: bytes
    headers: dict[str, str]
    team_id: str
    run_id: uuid.UUID | None = None


def dispatch_row(
    *,
    run_id: uuid.UUID,
    key: RunKey,
    team_id: str,
    effective_time: datetime,
    priority: Priority,
    traceparent: str,
    now: datetime,
    target: Target | None = None,
    kind: events_pb2.TargetKind.ValueType | None = None,
    team_weight: int = 1,
    overlap: OverlapPolicy | None = None,
) -> OutboxRow:
    """``kind``, when given, stands for ``target`` (a writer that read only the kind);
    ``team_weight`` is the team's share of workers' slots among its priority's teams;
    ``overlap`` is the job's policy (None: not known, so the worker may ask ahead)."""
    message = events_pb2.RunDispatch(
        run_id=str(run_id),
        job_id=str(key.job_id),
        team=team_id,
        idempotency_key=key.canonical(),
        nominal_time=to_timestamp(key.nominal_time),
        effective_time=to_timestamp(effective_time),
        priority=_PRIORITY_PB[priority],  # type: ignore[arg-type]
        # Unique per enqueue: a worker's repeated start of the same delivery gets its attempt back.
        dispatch_id=str(uuid.uuid4()),
        enqueue_time=to_timestamp(now),
        target_kind=target_kind(target) if kind is None else kind,
        team_weight=team_weight,
        starts_at_its_time=(
            overlap is not None and not may_start_ahead(run_overlap(overlap, key.origin))
        ),
    )
    return OutboxRow(
        topic=DISPATCH_TOPICS[priority],
        key=str(key.job_id).encode(),
        payload=message.SerializeToString(),
        headers={"traceparent": traceparent},
        team_id=team_id,
        run_id=run_id,
    )
