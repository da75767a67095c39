"""The dispatch message says its run's target kind, so a worker can reserve a launcher permit
before it starts a container attempt, and whether the run starts at its time, so a worker does
not ask for it ahead; a writer that does not know either leaves it unset."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from duetime.events.v1 import events_pb2
from duetime_core.jobspec import (
    ContainerTarget,
    HttpMethod,
    HttpTarget,
    OverlapPolicy,
    Priority,
    Target,
)
from duetime_core.runkey import RunKey, backfill_origin
from duetime_infra.dispatch import dispatch_row, overlap_of_spec

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def dispatched(
    *,
    target: Target | None = None,
    overlap: OverlapPolicy | None = None,
    key: RunKey | None = None,
) -> events_pb2.RunDispatch:
    """The message ``dispatch_row`` writes for a run of ``key`` (a scheduled one by default)."""
    row = dispatch_row(
        run_id=uuid.uuid4(),
        key=key or RunKey.scheduled(uuid.uuid4(), NOW),
        team_id="t",
        effective_time=NOW,
        priority=Priority.NORMAL,
        traceparent="",
        now=NOW,
        target=target,
        overlap=overlap,
    )
    return events_pb2.RunDispatch.FromString(row.payload)


def kind_of(target: Target | None) -> events_pb2.TargetKind.ValueType:
    return dispatched(target=target).target_kind


def test_the_target_kind_travels_in_the_dispatch() -> None:
    http = HttpTarget(method=HttpMethod.POST, url="https://x.test/", headers={}, body=b"")
    container = ContainerTarget(image="i:1", command=("true",), args=(), env={})
    assert kind_of(http) == events_pb2.TARGET_KIND_HTTP
    assert kind_of(container) == events_pb2.TARGET_KIND_CONTAINER
    assert kind_of(None) == events_pb2.TARGET_KIND_UNSPECIFIED


def at_its_time(overlap: OverlapPolicy | None, key: RunKey | None = None) -> bool:
    return dispatched(overlap=overlap, key=key).starts_at_its_time


def test_only_runs_whose_start_obeys_another_policy_than_allow_start_at_their_time() -> None:
    assert {p: at_its_time(p) for p in OverlapPolicy} == {
        OverlapPolicy.ALLOW: False,
        OverlapPolicy.SKIP: True,
        OverlapPolicy.BUFFER_ONE: True,
        OverlapPolicy.CANCEL_PREVIOUS: True,
    }
    # Not known: the worker may ask ahead, and the scheduler answers.
    assert not at_its_time(None)
    # A backfill's runs start under its own order, as ALLOW's do.
    backfill = RunKey(uuid.uuid4(), NOW, backfill_origin("b-1"))
    assert not at_its_time(OverlapPolicy.SKIP, backfill)


def test_a_stored_specs_overlap_is_read_and_an_unknown_one_is_not_known() -> None:
    assert overlap_of_spec("SKIP") is OverlapPolicy.SKIP
    assert overlap_of_spec(None) is None
    assert overlap_of_spec("SOMETIMES") is None
