"""A worker given two schedulers keeps its running attempt's lease when the one it talks to dies
or freezes: it reaches the other well within the lease, so the attempt is never expired."""

from __future__ import annotations

import signal
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from datetime import timedelta

import asyncpg
import pytest

from duetime_infra.admin import create_worker_token
from duetime_infra.pg.pool import create_pool
from testkit.fleet import new_prefix, scheduler_env
from testkit.http_target import Behaviour, http_target
from testkit.jobs import TEAM, create_jobs, ensure_team
from testkit.polling import eventually
from testkit.processes import enter_together, service
from testkit.system import http_job, notify_group, start_worker_groups_at_end

# Shorter than the call, so the call outlives several renewals and the gap the fault makes.
LEASE_SECONDS = 10
CALL_SECONDS = 15


@pytest.fixture
async def pool(db_dsn: str) -> AsyncIterator[asyncpg.Pool[asyncpg.Record]]:
    pool = await create_pool(db_dsn, max_size=4)
    yield pool
    await pool.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fault", [signal.SIGKILL, signal.SIGSTOP])
async def test_a_worker_keeps_its_lease_when_its_scheduler_dies_or_freezes(
    db_dsn: str, pool: asyncpg.Pool[asyncpg.Record], fault: signal.Signals
) -> None:
    await ensure_team(pool)
    async with pool.acquire() as conn:
        worker_token = await create_worker_token(conn)
    prefix = new_prefix()
    group = f"duetime-test-workers-{uuid.uuid4().hex[:12]}"
    await start_worker_groups_at_end(group)
    async with AsyncExitStack() as stack, http_target() as target:
        url = target.on("/long", Behaviour(delay=CALL_SECONDS))
        lease = {"DUETIME_ATTEMPT_LEASE": str(LEASE_SECONDS)}
        schedulers = [
            service(
                "duetime_scheduler",
                {**scheduler_env(db_dsn, prefix, name), **lease},
                "DUETIME_SCHEDULER_PORT",
            )
            for name in ("s1", "s2")
        ]
        relay = service("duetime_relay", {"DUETIME_PG_DSN": db_dsn}, "DUETIME_RELAY_PORT")
        first, second, _ = await enter_together(stack, [*schedulers, relay])
        await stack.enter_async_context(
            service(
                "duetime_worker",
                {
                    # The first reachable of the two: s1 while it answers.
                    "DUETIME_SCHEDULER_TARGET": f"{first.address},{second.address}",
                    "DUETIME_WORKER_TOKEN": worker_token,
                    "DUETIME_WORKER_ID": "w1",
                    "DUETIME_WORKER_GROUP": group,
                    "DUETIME_NOTIFY_GROUP": notify_group(group),
                    "DUETIME_TARGET_ALLOW": "127.0.0.1",
                    "DUETIME_HEARTBEAT_INTERVAL": "1",
                },
                "DUETIME_WORKER_PORT",
            )
        )
        now = await pool.fetchval("SELECT duetime_now()")
        job = http_job("long", url, at=now + timedelta(seconds=2), max_attempts=1)
        job.attempt_timeout.FromTimedelta(timedelta(seconds=60))
        (created,) = await create_jobs(pool, [job], TEAM)

        async def calling() -> bool:
            return len(target.calls_to("/long")) == 1

        await eventually(calling, 30, "the target called")
        first.process.send_signal(fault)
        try:

            async def finished() -> bool:
                state = await pool.fetchval(
                    "SELECT state FROM runs WHERE job_id = $1", created.job_id
                )
                return state in ("SUCCEEDED", "DEAD_LETTERED", "RETRY_WAIT")

            await eventually(finished, CALL_SECONDS + 30, "the run finished")
        finally:
            if fault is signal.SIGSTOP:
                first.process.send_signal(signal.SIGCONT)
        attempts = await pool.fetch(
            "SELECT a.number, a.outcome FROM run_attempts a "
            "JOIN runs r USING (run_id, nominal_time) WHERE r.job_id = $1",
            created.job_id,
        )
        assert [(a["number"], a["outcome"]) for a in attempts] == [(1, "SUCCEEDED")]
        assert len(target.calls_to("/long")) == 1
