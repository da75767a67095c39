"""A new dispatch message for a stored run going (back) to QUEUED."""

from __future__ import annotations

from datetime import datetime

import asyncpg

from duetime_core.jobspec import Priority
from duetime_core.runkey import RunKey
from duetime_infra.dispatch import OutboxRow, dispatch_row, target_kind_of_spec


def key_of(row: asyncpg.Record) -> RunKey:
    return RunKey(row["job_id"], row["nominal_time"], row["origin"])


def redispatch_row(row: asyncpg.Record, now: datetime, *, team_weight: int = 1) -> OutboxRow:
    """A new dispatch message for a run going back to QUEUED (retry, release, hand-back,
    reconciler). ``row`` carries ``target_kind``, its job version's target kind: a container
    dispatch without it would be started without the launcher's permit reserved, and handed
    back 'launcher busy' (spending a free hand-back) when every permit is taken."""
    return dispatch_row(
        run_id=row["run_id"],
        key=key_of(row),
        team_id=row["team_id"],
        effective_time=row["effective_time"],
        priority=Priority(row["priority"]),
        traceparent=row["traceparent"],
        now=now,
        kind=target_kind_of_spec(row["target_kind"]),
        team_weight=team_weight,
    )
