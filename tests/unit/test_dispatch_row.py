"""The dispatch message says its run's target kind, so a worker can reserve a launcher permit
before it starts a container attempt; a writer that does not know it leaves it unspecified."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from duetime.events.v1 import events_pb2
from duetime_core.jobspec import ContainerTarget, HttpMethod, HttpTarget, Priority, Target
from duetime_core.runkey import RunKey
from duetime_infra.dispatch import dispatch_row

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def kind_of(target: Target | None) -> events_pb2.TargetKind.ValueType:
    row = dispatch_row(
        run_id=uuid.uuid4(),
        key=RunKey.scheduled(uuid.uuid4(), NOW),
        team_id="t",
        effective_time=NOW,
        priority=Priority.NORMAL,
        traceparent="",
        now=NOW,
        target=target,
    )
    return events_pb2.RunDispatch.FromString(row.payload).target_kind


def test_the_target_kind_travels_in_the_dispatch() -> None:
    http = HttpTarget(method=HttpMethod.POST, url="https://x.test/", headers={}, body=b"")
    container = ContainerTarget(image="i:1", command=("true",), args=(), env={})
    assert kind_of(http) == events_pb2.TARGET_KIND_HTTP
    assert kind_of(container) == events_pb2.TARGET_KIND_CONTAINER
    assert kind_of(None) == events_pb2.TARGET_KIND_UNSPECIFIED
