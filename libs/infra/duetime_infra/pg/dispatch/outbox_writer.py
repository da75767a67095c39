"""Writing outbox rows: one statement for a whole batch, inside the caller's transaction."""

from __future__ import annotations

import json
from collections.abc import Sequence

from duetime_infra.dispatch import OutboxRow
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.sql import q


async def insert_outbox(conn: Conn, rows: Sequence[OutboxRow]) -> None:
    if not rows:
        return
    await conn.execute(
        q("outbox_insert"),
        [r.topic for r in rows],
        [r.key for r in rows],
        [r.payload for r in rows],
        [json.dumps(r.headers) for r in rows],
        [r.team_id for r in rows],
        [r.run_id for r in rows],
    )
