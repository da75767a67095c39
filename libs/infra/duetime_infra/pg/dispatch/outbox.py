"""The outbox on PostgreSQL, as the relay sees it: lock a batch of pending rows, delete the ones
the broker acknowledged; and the reconciler's re-enqueue of QUEUED runs whose message was lost.

The relay's transaction is: ``lock_batch`` (``FOR UPDATE SKIP LOCKED``), produce, ``delete_rows``
for the acknowledged ids, COMMIT. Rows not deleted stay pending, for this relay's next try or
another relay's.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple, TypeAlias

import asyncpg

from duetime_infra.kafka.topics import DISPATCH_TOPICS
from duetime_infra.pg.dispatch.outbox_writer import insert_outbox
from duetime_infra.pg.dispatch.redispatch import redispatch_row
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.sql import q
from duetime_infra.pg.typed_row import typed_row

log = logging.getLogger(__name__)

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"

# The channel an insert into the outbox notifies when it commits (migration 24's trigger).
OUTBOX_CHANNEL = "duetime_outbox"

# The longest wait between two re-enqueues of a run that stays stuck; the wait starts at the
# reconciler's threshold and doubles each time.
MAX_REENQUEUE_SPACING = timedelta(hours=1)


@dataclass(frozen=True)
class PendingRow:
    """One outbox row, as it is to be produced to Kafka."""

    id: int
    topic: str
    key: bytes
    payload: bytes
    headers: dict[str, str]


class StuckRun(NamedTuple):
    """A QUEUED run whose dispatch message was lost, as ``relay_reenqueue_stuck`` returns it."""

    run_id: uuid.UUID
    job_id: uuid.UUID
    nominal_time: datetime
    origin: str
    team_id: str
    effective_time: datetime
    priority: str
    traceparent: str
    trace_context: bytes | None
    target_kind: str | None
    job_overlap: str | None


def _headers(value: Any) -> dict[str, str]:
    # The pools' codec decodes jsonb to a dict; a row written as a JSON string inside jsonb (a
    # double-encoded write) is still read, rather than failing the whole batch.
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}


async def lock_batch(conn: Conn, limit: int, skip_topics: Collection[str] = ()) -> list[PendingRow]:
    """Locks up to ``limit`` of the oldest pending rows no other transaction holds, leaving
    out rows for ``skip_topics``. Call it inside a transaction: the locks are what keep other
    relays off these rows."""
    rows = await conn.fetch(q("relay_lock_batch"), limit, sorted(skip_topics))
    return [
        PendingRow(r["id"], r["topic"], r["message_key"], r["payload"], _headers(r["headers"]))
        for r in rows
    ]


async def delete_rows(conn: Conn, ids: list[int]) -> int:
    if not ids:
        return 0
    status = await conn.execute(q("relay_delete_rows"), ids)
    return int(status.rsplit(" ", 1)[1])


async def oldest_dispatch_age(conn: Conn) -> timedelta | None:
    """How long the oldest pending dispatch row has waited, by the database clock; None when
    there is none."""
    row = await conn.fetchrow(q("relay_outbox_oldest"), sorted(DISPATCH_TOPICS.values()))
    if row is None:
        return None
    now: datetime = row["now"]
    created: datetime = row["create_time"]
    return now - created


async def outbox_backlog(conn: Conn, count_up_to: int = 100_000) -> tuple[int, timedelta | None]:
    """How many rows wait in the outbox (exact up to ``count_up_to``, estimated above it) and
    how long the oldest has waited, by the database clock (None when the outbox is empty)."""
    row = await conn.fetchrow(q("relay_outbox_stats"), count_up_to)
    assert row is not None
    counted: int = row["counted"]
    depth = counted if counted < count_up_to else max(counted, row["id_span"] or 0)
    oldest: datetime | None = row["oldest"]
    return depth, None if oldest is None else row["now"] - oldest


async def reenqueue_stuck_runs(pool: Pool, after: timedelta, limit: int) -> int:
    """One batch of the reconciler: QUEUED runs more than ``after`` past their not-before time,
    untouched for ``after`` (or longer, for a run already re-enqueued: the spacing doubles up
    to ``MAX_REENQUEUE_SPACING``), with no dispatch row pending, each get a NEW dispatch outbox
    row (a new dispatch_id, the run's stored trace context and priority) and a fresh
    update_time, in one transaction. Returns how many; the caller loops while it returns
    ``limit``.

    A run whose message is merely slow to be consumed may be re-enqueued too: the duplicate is
    harmless, because starting an attempt is a conditional write.
    """
    if limit <= 0:
        return 0
    async with pool.acquire() as conn, conn.transaction():
        rows = await conn.fetch(
            q("relay_reenqueue_stuck"),
            after,
            limit,
            sorted(DISPATCH_TOPICS.values()),
            max(after, MAX_REENQUEUE_SPACING),
        )
        if not rows:
            return 0
        await insert_outbox(conn, [redispatch_row(typed_row(StuckRun, r), r["now"]) for r in rows])
    return len(rows)
