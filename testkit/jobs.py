"""Making jobs the way the API does, for tests of what happens to them afterwards."""

from __future__ import annotations

from datetime import timedelta

import asyncpg

from duetime.jobs.v1 import job_pb2
from duetime_api.jobs import JobOperations
from duetime_core.jobspec import Priority
from duetime_core.records import JobRecord
from duetime_infra.admin import create_team
from duetime_infra.pg.jobs.store import JobStore
from duetime_infra.pg.teams.store import update_team_quota
from testkit.secrets import secret_box

TEAM = "team-a"


def interval_job(seconds: float, **fields: object) -> job_pb2.Job:
    job = job_pb2.Job(
        target=job_pb2.Target(http=job_pb2.HttpTarget(url="https://target.test/hook")),
        **fields,  # type: ignore[arg-type]
    )
    job.schedule.interval.interval.FromTimedelta(timedelta(seconds=seconds))
    return job


def cron_job(expression: str, zone: str, **fields: object) -> job_pb2.Job:
    return job_pb2.Job(
        schedule=job_pb2.Schedule(cron=job_pb2.CronSchedule(expression=expression, time_zone=zone)),
        target=job_pb2.Target(http=job_pb2.HttpTarget(url="https://target.test/hook")),
        **fields,  # type: ignore[arg-type]
    )


async def ensure_team(pool: asyncpg.Pool[asyncpg.Record], team: str = TEAM) -> None:
    async with pool.acquire() as conn:
        if await conn.fetchval("SELECT 1 FROM teams WHERE team_id = $1", team) is None:
            await create_team(conn, team)


async def grant_priority(
    pool: asyncpg.Pool[asyncpg.Record], priority: Priority, team: str = TEAM
) -> None:
    """An operator grants the team ``priority`` (the default quota allows up to NORMAL)."""
    await ensure_team(pool, team)
    async with pool.acquire() as conn:
        await update_team_quota(conn, team, {"max_priority": priority.value})


async def create_jobs(
    pool: asyncpg.Pool[asyncpg.Record], jobs: list[job_pb2.Job], team: str = TEAM
) -> list[JobRecord]:
    await ensure_team(pool, team)
    service = JobOperations(JobStore(pool, secret_box()))
    return [await service.create(team, job, "") for job in jobs]


async def shift_clock(pool: asyncpg.Pool[asyncpg.Record], by: timedelta) -> None:
    """Moves the database clock (every service's "now") forward by ``by`` more."""
    await pool.execute("""UPDATE duetime_clock SET "offset" = "offset" + $1""", by)
