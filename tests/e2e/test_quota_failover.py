"""Runs held by their team's quota survive the death of the scheduler that claimed them."""

from __future__ import annotations

import signal
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import asyncpg
import pytest

from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_api.jobs import JobOperations
from duetime_infra.admin import create_worker_token
from duetime_infra.codec.attempt_token import ATTEMPT_METADATA_KEY
from duetime_infra.codec.timeconv import datetime_to_timestamp
from duetime_infra.pg.jobs.store import JobStore
from duetime_infra.pg.pool import create_pool
from duetime_infra.pg.teams.store import update_team_quota
from testkit.fleet import TTL_SECONDS, new_prefix, schedulers
from testkit.jobs import TEAM, ensure_team
from testkit.polling import eventually
from testkit.secrets import secret_box
from testkit.tls import service_channel
from testkit.worker_api import job_message

RUNS = 6
LIMIT = 2


@pytest.fixture
async def pool(db_dsn: str) -> AsyncIterator[asyncpg.Pool[asyncpg.Record]]:
    pool = await create_pool(db_dsn, max_size=4)
    yield pool
    await pool.close()


async def counts(pool: asyncpg.Pool[asyncpg.Record]) -> dict[tuple[str, str], int]:
    rows = await pool.fetch("SELECT state, reason, count(*) AS n FROM runs GROUP BY 1, 2")
    return {(r["state"], r["reason"]): r["n"] for r in rows}


@pytest.mark.timeout(120)
async def test_quota_held_runs_are_released_by_the_next_owner_after_a_kill(
    db_dsn: str, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    await ensure_team(pool)
    async with pool.acquire() as conn:
        await update_team_quota(conn, TEAM, {"max_running": LIMIT})
        worker_token = await create_worker_token(conn)
    now = await pool.fetchval("SELECT duetime_now()")
    service = JobOperations(JobStore(pool, secret_box()))
    for k in range(RUNS):
        job = job_message()
        job.schedule.Clear()
        datetime_to_timestamp(now + timedelta(seconds=1 + k * 0.1), job.schedule.at.run_time)
        await service.create(TEAM, job, "")
    prefix = new_prefix()
    async with schedulers(db_dsn, prefix, ["s1"]) as first:

        async def claimed() -> bool:
            return await counts(pool) == {("QUEUED", ""): LIMIT, ("WAITING", "QUOTA"): RUNS - LIMIT}

        await eventually(claimed, 20, "s1 claimed the runs, holding those past the quota")
        first["s1"].process.send_signal(signal.SIGKILL)
        await first["s1"].process.wait()
    async with schedulers(db_dsn, prefix, ["s2"]) as second:
        channel = service_channel(second["s2"].address)
        stub = worker_service_pb2_grpc.WorkerServiceStub(channel)
        auth = ("authorization", f"Bearer {worker_token}")
        try:
            finished: set[uuid.UUID] = set()

            async def run_what_is_queued() -> bool:
                """A worker: runs the queued runs; never more in flight than the quota."""
                in_flight = await pool.fetchval(
                    "SELECT count(*) FROM runs WHERE state IN ('QUEUED', 'RUNNING')"
                )
                assert in_flight <= LIMIT
                for row in await pool.fetch("SELECT run_id FROM runs WHERE state = 'QUEUED'"):
                    started = await stub.StartAttempt(
                        wpb.StartAttemptRequest(
                            run_id=str(row["run_id"]), delivery_id="d", worker_id="w"
                        ),
                        metadata=(auth,),
                    )
                    assert started.decision == wpb.START_DECISION_STARTED
                    await stub.CompleteAttempt(
                        wpb.CompleteAttemptRequest(
                            run_id=str(row["run_id"]),
                            result=wpb.ATTEMPT_RESULT_SUCCEEDED,
                            worker_id="w",
                        ),
                        metadata=(auth, (ATTEMPT_METADATA_KEY, str(started.attempt))),
                    )
                    finished.add(row["run_id"])
                return len(finished) == RUNS

            await eventually(run_what_is_queued, TTL_SECONDS + 30, "every held run released")
        finally:
            await channel.close()
    rows = await pool.fetch(
        "SELECT r.state, c.claimed_by, r.eligible_time, r.effective_time "
        "FROM runs r JOIN run_claims c USING (run_id, nominal_time)"
    )
    assert {(r["state"], r["claimed_by"]) for r in rows} == {("SUCCEEDED", "s1")}
    released = [r for r in rows if r["eligible_time"] is not None]
    assert len(released) == RUNS - LIMIT
    assert all(r["eligible_time"] > r["effective_time"] for r in released)
