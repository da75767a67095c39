"""bench/claim: claimed runs per second with few and with many stored jobs.

The same number of jobs is due in every case; the rest are due tomorrow. Each case runs in a
fresh database seeded with COPY in chunks of 100,000, and the claim runs through the real claim
transaction (`claim_batch`) over all 1,024 partitions, as one scheduler owning everything
would. The cost per claimed run should not grow with the jobs stored (the claim reads the
``(partition, next_run_time)`` index): the last line is the ratio of the largest case's to the
smallest's. Seeding 10 million jobs takes up to 36 GB of disk (18 GB once seeded; checked
before it starts) and half an hour or more. Results belong in bench/RESULTS.md.

    uv run --frozen python -m bench.claim [--stored 10000 1000000] [--due 10000] [--batch 500]
    uv run --frozen python -m bench.claim --stored 10000 10000000

Tracing is set up from the OTEL_* variables as in the scheduler (off unless an exporter is
configured), so the per-run "claim run" span can be measured with and without an exporter.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

from bench.harness import JOB_COLUMNS, cpu_model, load
from duetime_core.jobspec import Every, HttpMethod, HttpTarget, JobSpec
from duetime_core.runkey import partition_of
from duetime_infra.codec.spec_json import spec_to_json
from duetime_infra.pg.dispatch.claims import claim_batch
from duetime_infra.pg.dispatch.spec_cache import SpecCache
from duetime_infra.pg.fencing import FencingToken
from duetime_infra.pg.pool import create_pool
from duetime_infra.telemetry.tracing import setup_tracing
from testkit.databases import create_database, drop_database, migrated_template

TOKENS = {p: FencingToken(p, 0, 1) for p in range(1024)}


async def seed(dsn: str, stored: int, due: int) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        now = await conn.fetchval("SELECT duetime_now()")
        await conn.execute("INSERT INTO teams (team_id) VALUES ('bench')")
        spec = JobSpec(
            display_name="bench",
            # Hourly, so a slow seed of a million rows cannot make a second occurrence due.
            schedule=Every(timedelta(hours=1), None, now - timedelta(seconds=1)),
            target=HttpTarget(HttpMethod.POST, "https://target.test/hook"),
        )
        spec_text = json.dumps(spec_to_json(spec))
        rng = random.Random(7)

        def rows(start: int, end: int) -> list[tuple[object, ...]]:
            out: list[tuple[object, ...]] = []
            for i in range(start, end):
                job_id = uuid.UUID(int=rng.getrandbits(128), version=4)
                when = (
                    now - timedelta(seconds=1)
                    if i < due
                    else now + timedelta(days=1, seconds=rng.randrange(86400))
                )
                out.append((job_id, "bench", partition_of(job_id), "ACTIVE", spec_text, when, when))
            return out

        began = time.perf_counter()
        for start in range(0, stored, 100_000):
            chunk = rows(start, min(stored, start + 100_000))
            await conn.copy_records_to_table("jobs", records=chunk, columns=JOB_COLUMNS)
            # Each chunk's versions right after it, while its jobs' rows are in the cache: one
            # INSERT ... SELECT after 10 million jobs spent 27 minutes on the foreign-key checks.
            await conn.copy_records_to_table(
                "job_versions",
                records=[(r[0], 1, r[4]) for r in chunk],
                columns=["job_id", "version", "spec"],
            )
            if start and start % 1_000_000 == 0:
                print(f"  {start:,} jobs in {time.perf_counter() - began:.0f} s", flush=True)
        print(f"  jobs and versions written in {time.perf_counter() - began:.0f} s", flush=True)
        await conn.execute("VACUUM ANALYZE jobs")
        size = await conn.fetchval("SELECT pg_size_pretty(pg_database_size(current_database()))")
        print(f"  vacuumed in {time.perf_counter() - began:.0f} s; the database holds {size}")
    finally:
        await conn.close()


async def measure(
    dsn: str, batch: int, workers: int, flush: Callable[[], object]
) -> list[tuple[int, float, float]]:
    """Claims everything due with ``workers`` concurrent claim loops over disjoint partitions,
    so one loop's Python work overlaps another's time in the database; then, an hour later on
    the database clock, the same hourly jobs again, as a long-running scheduler would see them
    (their definitions already decoded). Returns (runs, seconds, CPU seconds of this process)
    for both rounds; the CPU includes ``flush``, the export of the round's spans, which a busy
    machine measures far more steadily than elapsed time."""
    pool = await create_pool(dsn, max_size=workers)
    groups = [{p: t for p, t in TOKENS.items() if p % workers == w} for w in range(workers)]
    caches = [SpecCache() for _ in groups]

    async def loop(tokens: dict[int, FencingToken], specs: SpecCache) -> int:
        claimed = 0
        async with pool.acquire() as conn:
            while True:
                result = await claim_batch(
                    conn,
                    tokens,
                    lookahead=timedelta(seconds=5),
                    batch_size=batch,
                    still_owner=lambda: True,
                    specs=specs,
                )
                claimed += result.runs
                if not result.full:
                    return claimed

    rounds = []
    try:
        for _ in range(2):
            started, cpu = time.perf_counter(), time.process_time()
            counts = await asyncio.gather(
                *(loop(g, c) for g, c in zip(groups, caches, strict=True))
            )
            elapsed = time.perf_counter() - started
            flush()
            rounds.append((sum(counts), elapsed, time.process_time() - cpu))
            await pool.execute(
                """UPDATE duetime_clock SET "offset" = "offset" + interval '1 hour'"""
            )
        return rounds
    finally:
        await pool.close()


# Disk a stored job takes while seeding: jobs and job_versions with their indexes (1.8 KB at
# 10 million), and as much again of WAL and free space at the peak.
BYTES_PER_STORED_JOB = 3_600


def check_disk(stored: int) -> None:
    """Refuses a case the disk cannot hold (the server's data directory is on this machine;
    its free space is assumed to be that of the bench's folder)."""
    free = shutil.disk_usage(Path(__file__).resolve().parent).free
    if stored * BYTES_PER_STORED_JOB > free:
        raise SystemExit(
            f"{stored:,} stored jobs need ~{stored * BYTES_PER_STORED_JOB / 1e9:.0f} GB; "
            f"{free / 1e9:.0f} GB free"
        )


async def main() -> None:
    tracing = setup_tracing("bench-claim")
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stored", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--due", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    print(
        f"bench/claim at {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {cpu_model()}; {load()}; "
        f"tracing {'on' if tracing is not None else 'off'}",
        flush=True,
    )
    flush = tracing.force_flush if tracing is not None else lambda: None
    template = await migrated_template()
    results = []
    try:
        for stored in args.stored:
            check_disk(stored)
            name = f"duetime_bench_{uuid.uuid4().hex[:8]}"
            dsn = await create_database(name, template=template)
            try:
                t0 = time.perf_counter()
                await seed(dsn, stored, args.due)
                seeded = time.perf_counter() - t0
                rounds = await measure(dsn, args.batch, args.workers, flush)
                for label, (claimed, elapsed, cpu) in zip(
                    ("first claim", "an hour later"), rounds, strict=True
                ):
                    assert claimed == args.due, (claimed, args.due)
                    per_run_us = elapsed / claimed * 1e6
                    if label == "first claim":
                        results.append((stored, claimed, elapsed, per_run_us))
                    print(
                        f"stored={stored:>9,} due={claimed:,} workers={args.workers} {label}: "
                        f"{claimed / elapsed:,.0f} runs/s ({per_run_us:.0f} µs/run, "
                        f"{cpu / claimed * 1e6:.0f} µs CPU/run)",
                        flush=True,
                    )
                print(f"  (seeded in {seeded:.1f} s)", flush=True)
            finally:
                await drop_database(name)
    finally:
        await drop_database(template)
    if len(results) > 1:
        ratio = results[-1][3] / results[0][3]
        print(f"per-run cost ratio {results[-1][0]:,} vs {results[0][0]:,} stored: {ratio:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
