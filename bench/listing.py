"""bench/listing: the job API's lists at a big team's size, as a console or a script reads them.

A team with 10,000 jobs (labelled, hourly crons and intervals) and 1,000,000 runs spread over
the last 28 days (0.5 % dead-lettered, 2 % missed or skipped, 2 % triggered), seeded with SQL
in a fresh database, read through the API's process over gRPC (TLS): a page of the team's runs
filtered by state, scheduled time and origin; a page of jobs with each one's latest runs and
next occurrences; one job's runs; the count of a batch redrive; ExplainOccurrence on one more
job of its own with 1,000,000 runs (every 2 s, each with its attempt, paused stretches of 1,000
occurrences as one SKIPPED range record each) for a run, an occurrence in a range and a time
that is no occurrence; then the console's pages, signed in as the team, over HTTPS (the time to
the whole page, an upper bound of the server's). Prints p50 and p95 of each, in milliseconds,
with the machine. Targets: ListRuns across the team with a filter p95 <= 100 ms;
ExplainOccurrence p95 <= 50 ms; every console page p95 <= 300 ms. Results belong in
bench/RESULTS.md.

    uv run --frozen python -m bench.listing [--jobs 10000] [--runs 1000000]
        [--explained-runs 1000000] [--repeat 40]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import re
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import aiohttp
import asyncpg

from bench.harness import cpu_model, load
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime.jobs.v1 import job_service_pb2_grpc
from duetime_core.jobspec import Every, HttpMethod, HttpTarget, JobSpec
from duetime_core.schedule.model import Cron
from duetime_infra.admin import create_team
from duetime_infra.codec.spec_json import spec_to_json
from testkit.cli import api_on_own_database
from testkit.console import http_client, running_console
from testkit.databases import drop_database, migrated_template
from testkit.tls import service_channel

_JOBS = """
INSERT INTO jobs (job_id, team_id, partition, state, spec, next_run_time, next_effective_time)
SELECT id, $1, (abs(hashtext(id::text)) % 1024),
       CASE WHEN i % 20 = 0 THEN 'PAUSED' ELSE 'ACTIVE' END,
       jsonb_set(jsonb_set(CASE WHEN i % 2 = 0 THEN $2::jsonb ELSE $3::jsonb END,
                           '{display_name}', to_jsonb('job-' || lpad(i::text, 5, '0'))),
                 '{labels}', jsonb_build_object('env', CASE WHEN i % 3 = 0 THEN 'prod' ELSE 'dev'
                                                 END, 'shard', (i % 10)::text)),
       date_trunc('hour', duetime_now()) + interval '1 hour',
       date_trunc('hour', duetime_now()) + interval '1 hour'
FROM (SELECT i, gen_random_uuid() AS id FROM generate_series(0, $4 - 1) AS i) g
"""

_RUNS = """
WITH j AS (SELECT job_id, partition, (row_number() OVER (ORDER BY job_id) - 1) AS n FROM jobs
           WHERE team_id = $1),
     s AS (SELECT i, duetime_now() - make_interval(secs => (i::float8 * $3)) AS nominal,
                  CASE WHEN i % 1000 < 5 THEN 'DEAD_LETTERED' WHEN i % 1000 < 15 THEN 'MISSED'
                       WHEN i % 1000 < 25 THEN 'SKIPPED' ELSE 'SUCCEEDED' END AS state
           FROM generate_series(1, $2) AS i)
INSERT INTO runs (run_id, job_id, team_id, partition, nominal_time, effective_time, origin,
                  state, reason, attempt, attempt_limit, first_start_time, job_version,
                  create_time, update_time)
SELECT gen_random_uuid(), j.job_id, $1, j.partition, s.nominal, s.nominal,
       CASE WHEN s.i % 50 = 0 THEN 'TRIGGER:bench-' || s.i ELSE 'SCHEDULE' END,
       s.state,
       CASE s.state WHEN 'DEAD_LETTERED' THEN 'ATTEMPTS_EXHAUSTED' WHEN 'MISSED' THEN 'MISFIRE'
                    WHEN 'SKIPPED' THEN 'JOB_PAUSED' ELSE '' END,
       CASE WHEN s.state IN ('SUCCEEDED', 'DEAD_LETTERED') THEN 1 ELSE 0 END, 3,
       CASE WHEN s.state IN ('SUCCEEDED', 'DEAD_LETTERED')
            THEN s.nominal + interval '40 milliseconds' END,
       1, s.nominal, s.nominal
FROM s JOIN j ON j.n = s.i % $4
"""

# Each run's one attempt, in its row (schema 27).
_ATTEMPTS = """
UPDATE runs
SET attempt_worker_id = 'w-1', attempt_start_time = first_start_time,
    attempt_lease_expire_time = first_start_time + interval '1 minute',
    attempt_deadline = first_start_time + interval '5 minutes',
    attempt_end_time = first_start_time + interval '90 milliseconds',
    attempt_outcome = CASE state WHEN 'SUCCEEDED' THEN 'SUCCEEDED' ELSE 'FAILED' END,
    attempt_error = CASE state WHEN 'SUCCEEDED' THEN '' ELSE 'HTTP 503' END,
    attempt_cancel_reason = '', attempt_early = false
WHERE team_id = $1 AND attempt = 1
"""


# One job's runs, every $4 seconds from $3: a SKIPPED range record stands for each stretch of
# 1,000 occurrences starting at a multiple of 100,000 (a pause), the rest ran.
_ONE_JOB_RUNS = """
INSERT INTO runs (run_id, job_id, team_id, partition, nominal_time, effective_time, origin,
                  state, reason, attempt, attempt_limit, first_start_time, job_version,
                  range_end_time, occurrence_count, create_time, update_time)
SELECT gen_random_uuid(), $2, $1, $6, s.nominal, s.nominal, 'SCHEDULE',
       CASE WHEN s.ranged THEN 'SKIPPED' ELSE 'SUCCEEDED' END,
       CASE WHEN s.ranged THEN 'JOB_PAUSED' ELSE '' END,
       CASE WHEN s.ranged THEN 0 ELSE 1 END, 3,
       CASE WHEN s.ranged THEN NULL ELSE s.nominal + interval '40 milliseconds' END, 1,
       CASE WHEN s.ranged THEN s.nominal + make_interval(secs => 999 * $4) END,
       CASE WHEN s.ranged THEN 1000 ELSE 1 END, s.nominal, s.nominal
FROM (SELECT i, $3::timestamptz + make_interval(secs => i * $4) AS nominal,
             i % 100000 = 0 AS ranged
      FROM generate_series(0, $5 - 1) AS i
      WHERE i % 100000 = 0 OR i % 100000 >= 1000) s
"""
EXPLAINED_EVERY = timedelta(seconds=2)


async def seed_explained(dsn: str, team: str, runs: int) -> tuple[str, datetime]:
    """The job ExplainOccurrence is timed on, with its ``runs`` (and their attempts): its id and
    its first occurrence."""
    conn = await asyncpg.connect(dsn)
    try:
        started = time.monotonic()
        now: datetime = await conn.fetchval("SELECT duetime_now()")
        first = (now - EXPLAINED_EVERY * runs).replace(microsecond=0)
        target = HttpTarget(HttpMethod.POST, "https://billing.internal/tick")
        spec = JobSpec("explained", Every(EXPLAINED_EVERY, first, first), target)
        job_id: str = await conn.fetchval(
            "INSERT INTO jobs (job_id, team_id, partition, state, spec, next_run_time, "
            "next_effective_time, create_time) "
            "VALUES (gen_random_uuid(), $1, 7, 'ACTIVE', $2, $3, $3, $4) RETURNING job_id::text",
            team,
            json.dumps(spec_to_json(spec)),
            first + EXPLAINED_EVERY * runs,
            first,
        )
        await conn.execute(
            "INSERT INTO job_versions (job_id, version, spec, create_time) "
            "SELECT job_id, 1, spec, create_time FROM jobs WHERE job_id = $1",
            uuid.UUID(job_id),
        )
        step = EXPLAINED_EVERY.total_seconds()
        await conn.execute(_ONE_JOB_RUNS, team, uuid.UUID(job_id), first, step, runs, 7)
        await conn.execute(_ATTEMPTS.replace("team_id = $1", "job_id = $1"), uuid.UUID(job_id))
        await conn.execute("ANALYZE")
        took = time.monotonic() - started
        print(f"seeded one job's {runs:,} runs in {took:.0f} s")
        return job_id, first
    finally:
        await conn.close()


def explained(
    api: Client, job_name: str, first: datetime, runs: int
) -> dict[str, Callable[[], Awaitable[object]]]:
    """ExplainOccurrence on the job of ``seed_explained``, at three kinds of time."""

    def at(moment: datetime) -> Callable[[], Awaitable[object]]:
        request = svc.ExplainOccurrenceRequest(job=job_name)
        request.time.FromDatetime(moment)
        return lambda: api.stub.ExplainOccurrence(request, metadata=api.auth())

    middle = first + EXPLAINED_EVERY * (runs // 2 + 7)
    in_range = first + EXPLAINED_EVERY * (100_000 * (runs // 200_000) + 500)
    return {
        "ExplainOccurrence, a run (1M runs)": at(middle),
        "ExplainOccurrence, in a range record": at(in_range),
        "ExplainOccurrence, no occurrence": at(middle + timedelta(seconds=1)),
    }


def _spec_documents() -> tuple[str, str]:
    target = HttpTarget(HttpMethod.POST, "https://billing.internal/run")
    hourly = JobSpec("", Cron("0 * * * *", "Europe/Paris", None, None), target)
    every = JobSpec("", Every(timedelta(minutes=30), None, datetime.now(UTC)), target)
    return json.dumps(spec_to_json(hourly)), json.dumps(spec_to_json(every))


async def seed(dsn: str, team: str, jobs: int, runs: int) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        started = time.monotonic()
        hourly, every = _spec_documents()
        await conn.execute(_JOBS, team, hourly, every, jobs)
        await conn.execute(
            "INSERT INTO job_versions (job_id, version, spec) SELECT job_id, 1, spec FROM jobs"
        )
        step = timedelta(days=28).total_seconds() / runs
        await conn.execute(_RUNS, team, runs, step, jobs)
        await conn.execute(_ATTEMPTS, team)
        await conn.execute("ANALYZE")
        print(f"seeded {jobs:,} jobs and {runs:,} runs in {time.monotonic() - started:.0f} s")
    finally:
        await conn.close()


async def timed(repeat: int, call: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """p50 and p95 of ``call``, in milliseconds, after one unmeasured call."""
    await call()
    took = []
    for _ in range(repeat):
        started = time.perf_counter()
        await call()
        took.append((time.perf_counter() - started) * 1000)
    cuts = statistics.quantiles(took, n=20)
    return statistics.median(took), cuts[18]


class Client:
    """JobService as one team sees it, over TLS to the API's process."""

    def __init__(self, address: str, token: str) -> None:
        self.channel = service_channel(address)
        self.stub = job_service_pb2_grpc.JobServiceStub(self.channel)
        self.token = token

    def auth(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),)


def cases(
    api: Client, team: str, job_name: str, day: str
) -> dict[str, Callable[[], Awaitable[object]]]:
    team_runs = f"teams/{team}/jobs/-"

    def runs(where: str, parent: str = team_runs) -> Callable[[], Awaitable[object]]:
        request = svc.ListRunsRequest(parent=parent, filter=where, page_size=50)
        return lambda: api.stub.ListRuns(request, metadata=api.auth())

    def jobs(**fields: object) -> Callable[[], Awaitable[object]]:
        request = svc.ListJobsRequest(page_size=50, **fields)  # type: ignore[arg-type]
        return lambda: api.stub.ListJobs(request, metadata=api.auth())

    count = svc.BatchRedriveRunsRequest(
        parent=team_runs, filter=f'nominal_time >= "{day}"', validate_only=True
    )
    return {
        "ListRuns team, no filter": runs(""),
        "ListRuns team, state = DEAD_LETTERED": runs("state = DEAD_LETTERED"),
        "ListRuns team, MISSED or SKIPPED": runs("state = MISSED OR state = SKIPPED"),
        "ListRuns team, since a day ago": runs(f'nominal_time >= "{day}"'),
        "ListRuns team, triggered, failed": runs("origin = TRIGGER AND state = DEAD_LETTERED"),
        "ListRuns one job": runs("", parent=job_name),
        "ListJobs page, 5 recent + 5 upcoming": jobs(recent_runs=5, upcoming_runs=5),
        "ListJobs labels.env = prod": jobs(filter="labels.env = prod"),
        'ListJobs name contains "0042"': jobs(filter='display_name:"0042"'),
        "BatchRedriveRuns count, a day": lambda: api.stub.BatchRedriveRuns(
            count, metadata=api.auth()
        ),
    }


async def signed_in(client: aiohttp.ClientSession, console: str, token: str) -> None:
    async with client.get(f"{console}/signin") as response:
        csrf = re.search(r'name="csrf" value="([^"]+)"', await response.text())
    assert csrf is not None, "no sign-in form"
    form = {"token": token, "csrf": csrf[1]}
    async with client.post(f"{console}/signin", data=form) as response:
        assert response.status == 200, await response.text()


def pages(
    client: aiohttp.ClientSession, console: str, job_id: str, run: str
) -> dict[str, Callable[[], Awaitable[object]]]:
    async def get(path: str) -> None:
        async with client.get(console + path) as response:
            assert response.status == 200, (path, response.status, await response.text())
            await response.read()

    paths = {
        "console /jobs": "/jobs",
        "console /jobs, label env=prod": "/jobs?label=env%3Dprod",
        "console a job": f"/jobs/{job_id}",
        "console /runs": "/runs",
        "console /runs, DEAD_LETTERED": "/runs?state=DEAD_LETTERED",
        "console a run": f"/runs/{run}",
        "console /dead-letters": "/dead-letters",
        "console /quota": "/quota",
    }
    return {label: functools.partial(get, path) for label, path in paths.items()}


async def report(label: str, repeat: int, call: Callable[[], Awaitable[object]]) -> None:
    p50, p95 = await timed(repeat, call)
    print(f"{label:45} {p50:8.1f} {p95:8.1f}", flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--explained-runs", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args()
    template = await migrated_template()
    try:
        async with api_on_own_database(template) as (address, dsn):
            conn = await asyncpg.connect(dsn)
            try:
                token = await create_team(conn, "bench")
                now: datetime = await conn.fetchval("SELECT duetime_now()")
            finally:
                await conn.close()
            await seed(dsn, "bench", args.jobs, args.runs)
            api = Client(address, token)
            listed = await api.stub.ListRuns(
                svc.ListRunsRequest(parent="teams/bench/jobs/-", page_size=1),
                metadata=api.auth(),
            )
            run = listed.runs[0]
            day = (now - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
            print(f"{cpu_model()}; {load()}")
            print(f"{'case':45} {'p50 ms':>8} {'p95 ms':>8}")
            for label, call in cases(api, "bench", f"teams/bench/jobs/{run.job_id}", day).items():
                await report(label, args.repeat, call)
            async with running_console(address) as console, http_client() as client:
                await signed_in(client, console.url, token)
                for label, call in pages(
                    client, console.url, run.job_id, f"{run.job_id}/{run.run_id}"
                ).items():
                    await report(label, args.repeat, call)
            # Seeded last, so the team's lists above read the same runs as before.
            job_id, first = await seed_explained(dsn, "bench", args.explained_runs)
            name = f"teams/bench/jobs/{job_id}"
            for label, call in explained(api, name, first, args.explained_runs).items():
                await report(label, args.repeat, call)
            await api.channel.close()
    finally:
        await drop_database(template)


if __name__ == "__main__":
    asyncio.run(main())
