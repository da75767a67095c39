"""The "run holds the job" rule has one definition per language: the SQL function the
statements call and OtherRun.active. They must agree on every state and attempt count."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import asyncpg

from duetime_core.attempts import OtherRun
from duetime_core.records import RunState


async def test_the_sql_rule_is_the_python_rule_for_every_state(db_dsn: str) -> None:
    conn = await asyncpg.connect(db_dsn)
    try:
        cases = [(state, attempt) for state in RunState for attempt in (0, 1, 2)]
        sql = [
            await conn.fetchval("SELECT duetime_run_holds_job($1, $2)", state.value, attempt)
            for state, attempt in cases
        ]
    finally:
        await conn.close()
    python = [
        OtherRun(uuid.uuid4(), datetime.now(UTC), state, attempt, False, "").active
        for state, attempt in cases
    ]
    assert sql == python
    assert any(python)
    assert not all(python)
