"""Two teams calling the same host through a worker's per-host connection limit, with the four
services as processes on a fresh database, real etcd and Kafka, and a real HTTP target: one
team's flood of slow calls fills the limit and queues behind it, and another team's call due
inside that drain waits for one connection to free, not for the whole flood."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from duetime_infra.admin import create_team
from testkit.http_target import Behaviour, http_target
from testkit.polling import eventually
from testkit.system import Api, http_job, running_system

pytestmark = pytest.mark.timeout(120)

FLOOD = 40
CALL_SECONDS = 0.3
PER_HOST = 2
# The flood's calls take FLOOD * CALL_SECONDS / PER_HOST (6 s) to drain through the limit; the
# small team's run is due this long after the flood's, with most of the flood still waiting.
SMALL_AFTER = 1.5


async def test_a_small_teams_call_to_a_shared_host_waits_for_a_connection_not_the_flood(
    db_dsn: str,
) -> None:
    conn = await asyncpg.connect(db_dsn)
    try:
        small_token = await create_team(conn, "team-small")
    finally:
        await conn.close()
    async with (
        http_target() as target,
        running_system(
            db_dsn, worker_extra={"DUETIME_HTTP_CONNECTIONS_PER_HOST": str(PER_HOST)}
        ) as system,
    ):
        small = Api(system.api_service.address, small_token, system.common_env)
        try:
            flood_url = target.on("/flood", Behaviour(delay=CALL_SECONDS))
            small_url = target.on("/small", Behaviour())
            at = datetime.now(UTC) + timedelta(seconds=6)
            for n in range(FLOOD):
                await system.api.create(http_job(f"flood-{n}", flood_url, at=at))
            due = at + timedelta(seconds=SMALL_AFTER)
            await small.create(http_job("small", small_url, at=due))
            await eventually(lambda: len(target.calls) == FLOOD + 1, 60, "every run called once")
        finally:
            await small.close()
    (called,) = target.calls_to("/small")
    flood = [c.time for c in target.calls_to("/flood")]
    # Its turn came as one connection freed: most of the flood was still waiting behind it.
    after = sum(t > called.time for t in flood)
    assert after >= FLOOD // 2, f"{after} of the flood's calls after the small team's"
    assert called.time - due < timedelta(seconds=2), called.time - due
