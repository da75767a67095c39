"""bench/steady: the highest steady rate of runs whose p99 start lateness stays within 1 s.

A step at rate R seeds R x ``--interval`` interval jobs into a fresh database, their anchors
spread evenly over one interval, so R runs a second fall due from ``--lead`` seconds on; the
four services (``--workers`` workers) run them against ``bench.target`` (a process of its own)
on the bench's own Kafka broker. After ``--warmup`` seconds a window of ``--duration``
seconds is measured: every run due in it must be called within ``--tail`` seconds of its end.
A step passes when none is missing or early and the p99 lateness by the target's clock is at
most ``--p99`` seconds. The rate doubles from ``--start`` until a step fails, then bisects
(``--precision``); ``--rates`` runs given rates instead.

Reported per step: lateness (target clock), CPU µs per run per process in the window, and what
PostgreSQL did per run in the bench's own database: transactions (pg_stat_database: commits and
rollbacks), statements (pg_stat_statements, where the server loads it, as ``scripts/stack``
does: top-level statements a run and the costliest), rows inserted, updated and deleted per table
(pg_stat_user_tables, partitions under their parent), Kafka records per run (dispatch topics,
and consumer offset commits), and bytes stored per run in runs and attempts after a VACUUM
(beyond what the empty partitions take).
Results belong in bench/RESULTS.md.

    uv run --frozen python -m bench.steady [--start 100] [--duration 60] [--interval 10]
        [--rates 200 400] [--workers 2] [--p99 1.0] [--pg-sample]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

from bench.harness import (
    OFFSETS_TOPIC,
    Counts,
    CpuFigures,
    CpuMeter,
    HerdOutcome,
    QuerySampler,
    SeedJob,
    StatementStats,
    bench_parser,
    bench_system,
    bench_workspace,
    cpu_model,
    database_counts,
    herd_outcome,
    load,
    options_from,
    quantiles,
    seed_jobs,
    shown,
    sleep_until,
    system_processes,
    target_process,
    writes_per_run,
)
from duetime_core.runkey import RunKey
from duetime_infra.kafka.topics import DISPATCH_TOPICS
from testkit.databases import create_database, drop_database
from testkit.system import TEAM


@dataclass(frozen=True)
class Options:
    interval: float
    lead: float
    warmup: float
    duration: float
    tail: float
    workers: int
    p99: float
    pg_sample: bool = False


@dataclass(frozen=True)
class Step:
    rate: int
    outcome: HerdOutcome
    cpu: CpuFigures
    # Per run due in the window:
    transactions: float
    writes: dict[str, tuple[float, float, float]]  # table: inserted, updated, deleted
    dispatches: float
    offset_commits: float
    stored_bytes: float

    @property
    def p99(self) -> float:
        return quantiles(self.outcome.late)[1] if self.outcome.late else float("inf")

    def passed(self, limit: float) -> bool:
        return not self.outcome.problems and self.p99 <= limit


async def step(template: str, rate: int, options: Options, tmp: Path) -> Step:
    name = f"duetime_bench_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name, template=template)
    try:
        async with (
            target_process(tmp) as target,
            bench_system(dsn, workers=options.workers) as system,
        ):
            conn = await asyncpg.connect(dsn)
            try:
                jobs = round(rate * options.interval)
                every = timedelta(seconds=options.interval)
                now: datetime = await conn.fetchval("SELECT duetime_now()")
                t0 = (now + timedelta(seconds=options.lead)).replace(microsecond=0)
                anchors = [
                    t0 + timedelta(milliseconds=round(i * options.interval * 1000 / jobs))
                    for i in range(jobs)
                ]
                url = target.url("/steady")
                empty = await history_bytes(conn)
                ids = await seed_jobs(dsn, [SeedJob(TEAM, a, url, every) for a in anchors])
                meter = CpuMeter(await system_processes(system, tmp / "kafka", target))
                w0 = t0 + timedelta(seconds=options.warmup)
                w1 = w0 + timedelta(seconds=options.duration)
                print(f"  rate {rate:,}/s: {jobs:,} jobs every {options.interval:g} s", flush=True)
                await sleep_until(w0)
                meter.start()
                before = await database_counts(conn)
                statements = StatementStats(dsn)
                await statements.start()
                sampler = QuerySampler(dsn) if options.pg_sample else None
                async with sampler or contextlib.nullcontext():
                    await sleep_until(w1)
                meter.stop()
                after = await database_counts(conn)
                if sampler is not None:
                    sampler.report()
                due = occurrences(ids, anchors, every, w0, w1)
                await statements.report(len(due), top=8)
                await wait_for_runs(conn, len(due), w0, w1, options.tail)
                # Runs due before or after the window are not this step's.
                calls = [c for c in await target.stop() if c.idempotency_key in due]
                cpu = meter.report(len(due), split=False)
                outcome = herd_outcome(f"duetime@{rate}/s", due, calls, w0, cpu)
                stored = await stored_bytes(conn, empty)
            finally:
                await conn.close()
        return summarise_step(rate, outcome, cpu, before, after, len(due), stored)
    finally:
        await drop_database(name)


def occurrences(
    ids: list[uuid.UUID],
    anchors: list[datetime],
    every: timedelta,
    w0: datetime,
    w1: datetime,
) -> dict[str, datetime]:
    """Every run due in [w0, w1), by its idempotency key."""
    due = {}
    for job_id, anchor in zip(ids, anchors, strict=True):
        at = anchor + every * max(0, -((anchor - w0) // every))
        while at < w1:
            if at >= w0:
                due[RunKey.scheduled(job_id, at).canonical()] = at
            at += every
    return due


async def wait_for_runs(
    conn: asyncpg.Connection, runs: int, w0: datetime, w1: datetime, tail: float
) -> None:
    """Until every run due in the window has succeeded, or ``tail`` seconds after it."""
    deadline = w1 + timedelta(seconds=tail)
    while datetime.now(UTC) < deadline:
        done = await conn.fetchval(
            "SELECT count(*) FROM runs WHERE state = 'SUCCEEDED' "
            "AND effective_time >= $1 AND effective_time < $2",
            w0,
            w1,
        )
        if int(done) >= runs:
            return
        await asyncio.sleep(0.5)


async def history_bytes(conn: asyncpg.Connection) -> int:
    """Bytes of runs and attempts: heap, TOAST and indexes, every partition."""
    size = await conn.fetchval(
        "SELECT sum(pg_total_relation_size(i.inhrelid)) FROM pg_inherits i "
        "WHERE i.inhparent IN ('runs'::regclass, 'attempts'::regclass)"
    )
    return int(size)


async def stored_bytes(conn: asyncpg.Connection, empty: int) -> float:
    """Bytes of runs and attempts per run stored, beyond what the empty partitions take, after
    a VACUUM (dead row versions of the updates are reused, not kept)."""
    await conn.execute("VACUUM runs, attempts")
    runs = await conn.fetchval("SELECT count(*) FROM runs")
    return (await history_bytes(conn) - empty) / max(1, int(runs))


def summarise_step(
    rate: int,
    outcome: HerdOutcome,
    cpu: CpuFigures,
    before: Counts,
    after: Counts,
    runs: int,
    stored: float,
) -> Step:
    writes = writes_per_run(before, after, runs)
    kafka = Counter({tp.topic: 0 for tp in after.kafka})
    for tp, end in after.kafka.items():
        kafka[tp.topic] += end - before.kafka.get(tp, 0)
    dispatches = sum(kafka[t] for t in DISPATCH_TOPICS.values()) / runs
    found = Step(
        rate,
        outcome,
        cpu,
        (after.transactions - before.transactions) / runs,
        writes,
        dispatches,
        kafka[OFFSETS_TOPIC] / runs,
        stored,
    )
    print(f"  per run: {found.transactions:.2f} transactions; rows written {shown(writes)}")
    print(
        f"  per run: Kafka {dispatches:.2f} dispatch records, {found.offset_commits:.3f} "
        f"offset commits; {stored:.0f} bytes stored in runs + attempts"
    )
    return found


def next_rate(passed: int | None, failed: int | None, rate: int) -> int:
    """Doubling until a failure, then bisecting."""
    if failed is None:
        return rate * 2
    if passed is None:
        return max(1, failed // 2)
    return (passed + failed) // 2


async def search(args: argparse.Namespace, options: Options, template: str, tmp: Path) -> None:
    steps: list[Step] = []
    passed: int | None = None
    failed: int | None = None
    rate = args.start
    queue = list(args.rates or [])
    while True:
        if args.rates:
            if not queue:
                break
            rate = queue.pop(0)
        print(f"step {len(steps) + 1}: {rate:,} runs/s ({load()})", flush=True)
        found = await step(template, rate, options, tmp)
        steps.append(found)
        ok = found.passed(options.p99)
        print(f"  p99 {found.p99:.2f} s: {'PASS' if ok else 'FAIL'}", flush=True)
        if ok:
            passed = max(rate, passed or 0)
        else:
            failed = min(rate, failed or rate)
        if args.rates:
            continue
        if passed and failed and failed - passed <= max(1, args.precision * passed):
            break
        if len(steps) >= args.max_steps:
            break
        rate = next_rate(passed, failed, rate)
    report(steps, options, passed)


def report(steps: list[Step], options: Options, best: int | None) -> None:
    print(f"\nsummary ({cpu_model()}; {load()} at the end)")
    for s in steps:
        p50, _, top = quantiles(s.outcome.late) if s.outcome.late else (0.0, 0.0, 0.0)
        groups = ", ".join(
            f"{name.strip()} {a:.0f}" for name, (_, a) in s.cpu.groups.items() if a >= 1
        )
        print(
            f"  {s.rate:>6,}/s p50 {p50:.2f} p99 {s.p99:.2f} max {top:.2f} s "
            f"{'PASS' if s.passed(options.p99) else 'FAIL'}; CPU µs/run {s.cpu.after:.0f} "
            f"({groups}); {s.transactions:.2f} xacts/run; {s.outcome.load}"
        )
    print(f"  highest rate with p99 <= {options.p99:g} s: {best or 'none'} runs/s")


async def main() -> None:
    parser = bench_parser(__doc__, pg_sample=True)
    parser.add_argument("--start", type=int, default=100)
    parser.add_argument("--rates", type=int, nargs="+", help="run these rates, no search")
    parser.add_argument("--precision", type=float, default=0.1)
    parser.add_argument("--max-steps", type=int, default=10)
    parser.add_argument("--interval", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--tail", type=float, default=30.0)
    parser.add_argument("--p99", type=float, default=1.0)
    args = parser.parse_args()
    options = options_from(Options, args)
    print(f"bench/steady at {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {cpu_model()}; {load()}")
    print(f"  {options}", flush=True)
    async with bench_workspace("duetime-steady-") as (template, tmp):
        await search(args, options, template, tmp)


if __name__ == "__main__":
    asyncio.run(main())
