"""bench/archive: a week of 10,000,000 runs archived, verified and dropped, then read back.

Seeds one week's partition (three weeks old) in a fresh database with SQL (generate_series):
10,000,000 finished runs of 10,000 jobs in 20 teams (one run of each job every 10 minutes;
0.5 % dead-lettered with three attempts, 1 % missed, 2 % triggered), with their attempts.
Prints the bytes a run takes in PostgreSQL (heap, indexes and TOAST of the runs and attempts
partitions, freshly loaded: no dead rows yet, a lower bound of steady state). Then runs one
archiving pass as the scheduler does, a child process (`python -m duetime_scheduler.archive`)
against a moto S3 server, while this process's event loop ticks every 10 ms (its worst delay
shows what the pass costs a scheduler's claim loop on the same machine). Prints the pass's
steps, the child's peak memory, the archive's bytes a run, and the time to read back one
job's runs for a day through the API's reader (first read, with the object's footer, and
again). Targets: the pass <= 5 minutes; the read <= 1 s; <= 60 B a run in the archive.

    flock /work/wt/bench.lock uv run --frozen python -m bench.archive [--runs 10000000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import time
import uuid
from datetime import datetime, timedelta

import asyncpg

from bench.harness import cpu_model, load
from duetime_infra.archive.layout import object_key
from duetime_infra.archive.reader import ArchiveReader
from duetime_infra.archive.settings import ArchiveSettings
from duetime_infra.pg.jobs.reads import Page
from duetime_infra.pg.pool import create_pool
from duetime_scheduler.maintenance import ArchivePasses
from testkit.databases import create_database, drop_database, migrated_template
from testkit.history import seed_runs
from testkit.s3 import filesystem, private_s3

TEAMS = 20

_JOBS = """
INSERT INTO jobs (job_id, team_id, partition, state, spec, next_run_time, next_effective_time)
SELECT id, 'team-' || lpad((i % $2)::text, 2, '0'), abs(hashtext(id::text)) % 1024, 'ACTIVE',
       '{"display_name": "bench"}'::jsonb, NULL, NULL
FROM (SELECT i, gen_random_uuid() AS id FROM generate_series(0, $1 - 1) AS i) g
"""

_SIZES = """
SELECT sum(pg_relation_size(c.oid)) AS heap,
       sum(pg_indexes_size(c.oid)) AS indexes,
       sum(coalesce(pg_total_relation_size(c.reltoastrelid), 0)) AS toast
FROM pg_class c WHERE c.relname = ANY($1::text[])
"""


async def seed(dsn: str, jobs: int, runs: int) -> tuple[datetime, str]:
    """The week's start and its runs partition's name."""
    conn = await asyncpg.connect(dsn)
    try:
        started = time.monotonic()
        for t in range(TEAMS):
            await conn.execute("INSERT INTO teams (team_id) VALUES ($1)", f"team-{t:02d}")
        await conn.execute(_JOBS, jobs, TEAMS)
        ids = [r["job_id"] for r in await conn.fetch("SELECT job_id FROM jobs ORDER BY job_id")]
        week: datetime = await conn.fetchval(
            "SELECT date_trunc('week', duetime_now() - interval '21 days')"
        )
        step = timedelta(days=7) / runs
        await seed_runs(conn, ids, week, runs, step)
        await conn.execute("VACUUM ANALYZE runs, attempts")
        print(f"seeded {runs:,} runs of {jobs:,} jobs in {time.monotonic() - started:.0f} s")
        return week, f"runs_{week:%Y%m%d}"
    finally:
        await conn.close()


async def postgres_bytes(dsn: str, runs_table: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        attempts_table = "attempts_" + runs_table.removeprefix("runs_")
        count = await conn.fetchval(f'SELECT count(*) FROM "{runs_table}"')
        attempts = await conn.fetchval(f'SELECT count(*) FROM "{attempts_table}"')
        print(f"PostgreSQL, {count:,} runs and {attempts:,} attempts (bytes a run):")
        total = 0.0
        for label, tables in (("runs", [runs_table]), ("attempts", [attempts_table])):
            row = await conn.fetchrow(_SIZES, tables)
            assert row is not None
            heap, indexes, toast = (float(row[k]) / count for k in ("heap", "indexes", "toast"))
            total += heap + indexes + toast
            print(f"  {label:9} heap {heap:6.0f}  indexes {indexes:6.0f}  TOAST {toast:4.0f}")
        print(f"  total     {total:6.0f} B a run")
    finally:
        await conn.close()


async def ticking(stop: asyncio.Event) -> float:
    """The worst delay of a 10 ms timer on this event loop until ``stop``, in ms."""
    worst = 0.0
    while not stop.is_set():
        before = time.monotonic()
        await asyncio.sleep(0.01)
        worst = max(worst, time.monotonic() - before - 0.01)
    return worst * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10_000_000)
    parser.add_argument("--jobs", type=int, default=10_000)
    args = parser.parse_args()
    print(f"{cpu_model()}; {load()}")
    template = await migrated_template()
    name = f"duetime_bench_{uuid.uuid4().hex[:8]}"
    dsn = await create_database(name, template=template)
    try:
        week, runs_table = await seed(dsn, args.jobs, args.runs)
        await postgres_bytes(dsn, runs_table)
        async with private_s3() as server:
            bucket = server.new_bucket()
            env = {**os.environ, "DUETIME_PG_DSN": dsn, **server.environ(bucket)}
            passes = ArchivePasses((sys.executable, "-m", "duetime_scheduler.archive"), env)
            stop = asyncio.Event()
            ticks = asyncio.create_task(ticking(stop))
            started = time.monotonic()
            passes.start()
            result = await passes.wait()
            took = time.monotonic() - started
            stop.set()
            worst_tick = await ticks
            assert result is not None, "the pass ended without a result"
            mine = [w for w in result.weeks if w.runs]
            assert mine, result
            assert mine[0].outcome == "archived", result
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            print(f"pass: {took:.1f} s for {len(result.weeks)} weeks; the full week's steps (s):")
            print("  " + ", ".join(f"{k} {v:.1f}" for k, v in mine[0].steps.items()))
            print(
                f"  child's peak memory {peak:.0f} MiB; this loop's worst 10 ms tick "
                f"{worst_tick:.0f} ms late"
            )
            settings = server.settings(bucket)
            size = filesystem(server).get_file_info(settings.key(object_key(week))).size
            print(f"archive: {size / 2**20:.0f} MiB, {size / args.runs:.1f} B a run")
            await read_back(dsn, settings, week)
    finally:
        await drop_database(name)
        await drop_database(template)


async def read_back(dsn: str, settings: ArchiveSettings, week: datetime) -> None:
    pool = await create_pool(dsn, max_size=2)
    try:
        row = await pool.fetchrow("SELECT job_id, team_id FROM jobs ORDER BY job_id LIMIT 1")
        assert row is not None
        job, team = row["job_id"], row["team_id"]
        day = week + timedelta(days=3)
        where = (
            f'nominal_time >= "{day.isoformat()}" AND '
            f'nominal_time < "{(day + timedelta(days=1)).isoformat()}"'
        )
        cold = ArchiveReader(pool, settings)
        warmed = ArchiveReader(pool, settings)
        started = time.monotonic()
        await warmed.warm()
        print(f"the API's reader reads the footers ahead: {time.monotonic() - started:.2f} s")
        for label, reader in (("cold", cold), ("again", cold), ("footers read ahead", warmed)):
            started = time.monotonic()
            runs = await reader.list_runs(team, job, None, where, Page(None, None, 1000))
            took = time.monotonic() - started
            print(f"read one job's day ({len(runs)} runs), {label}: {took * 1000:.0f} ms")
    finally:
        await pool.close()


if __name__ == "__main__":
    asyncio.run(main())
