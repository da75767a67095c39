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

from bench import run_bytes
from bench.harness import cpu_model, load
from duetime_infra.archive.layout import object_key
from duetime_infra.archive.reader import ArchiveReader
from duetime_infra.archive.settings import ArchiveSettings
from duetime_infra.pg.jobs.reads import Page
from duetime_infra.pg.pool import create_pool
from duetime_scheduler.maintenance import ArchivePasses
from testkit.databases import create_database, drop_database, migrated_template
from testkit.s3 import filesystem, private_s3


async def postgres_bytes(dsn: str, week: datetime) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await run_bytes.postgres_bytes(conn, week)
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
        week = await run_bytes.seed(dsn, args.jobs, args.runs)
        await postgres_bytes(dsn, week)
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
