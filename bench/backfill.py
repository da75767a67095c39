"""bench/backfill: a backfill of ``--count`` occurrences under a team's rate quota.

The four services run as processes on a Kafka broker of the bench's own and call an HTTP target
in a process of its own. One every-minute job (UTC) is made through the API, its team's quota
set to ``--rate`` dispatches a second (burst ``--burst``), and ``--count`` of its past
occurrences are backfilled (BackfillJob, overlap ALL): counted first (``validate_only``), then
made, the call timed. Once every run finished, the same range is backfilled again with
SKIP_RAN, which must make nothing.

Reported: the count's and the write's call times; the dispatch rate (from each run's eligible
time, when the quota let it go: the burst left out) against the quota, which must hold within
5 %; and correctness: every occurrence recorded once with origin BACKFILL and SUCCEEDED, each
called once at the target (by its idempotency key), none called before it was eligible, and
the second backfill making no run.

The quota's burst must cover the scheduler's pass over held runs (``DUETIME_CLAIM_POLL_INTERVAL``,
0.2 s, plus the pass): what the rate allows beyond the burst between two passes is lost, so
under 20 a second a burst of 5 (a quarter second) dispatches about 18 a second (smoke run,
100 occurrences); a burst of 20 holds the rate (19.97 a second, 300 occurrences).

    uv run python -m bench.backfill [--count 10000] [--rate 20] [--burst 20] [--workers 2]
        [--profile DIR]
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

from bench.harness import (
    bench_parser,
    bench_system,
    bench_workspace,
    options_from,
    profiled,
    target_process,
)
from duetime.jobs.v1 import job_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime_infra.pg.teams import store as team_store
from testkit.databases import create_database, drop_database
from testkit.fleet import eventually
from testkit.system import TEAM, System, http_job

# The dispatch rate must be the quota's within this share.
PACE = 0.05


@dataclass(frozen=True)
class Options:
    count: int
    rate: int
    burst: int
    workers: int
    lead: float
    profile: Path | None = None


@dataclass
class Outcome:
    count_seconds: float = 0.0
    write_seconds: float = 0.0
    dispatch_rate: float = 0.0
    problems: list[str] = field(default_factory=list)


def backfill_request(
    name: str, start: datetime, end: datetime, **fields: object
) -> svc.BackfillJobRequest:
    request = svc.BackfillJobRequest(name=name, **fields)  # type: ignore[arg-type]
    request.start_time.FromDatetime(start)
    request.end_time.FromDatetime(end)
    return request


async def timed_backfill(
    system: System, request: svc.BackfillJobRequest
) -> tuple[svc.BackfillJobResponse, float]:
    began = time.perf_counter()
    response = await system.api.stub.BackfillJob(request, metadata=system.api.metadata, timeout=300)
    return response, time.perf_counter() - began


async def run(options: Options, template: str, tmp: Path) -> Outcome:
    name = f"duetime_bench_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name, template=template)
    outcome = Outcome()
    try:
        async with (
            target_process(tmp) as target,
            bench_system(
                dsn,
                workers=options.workers,
                scheduler_extra=profiled(options.profile, "scheduler"),
            ) as system,
        ):
            conn = await asyncpg.connect(dsn)
            try:
                quota = {"runs_per_minute": options.rate * 60, "rate_burst": options.burst}
                await team_store.update_team_quota(conn, TEAM, quota)
            finally:
                await conn.close()
            job = http_job("backfill", target.url("/backfill"), cron=("* * * * *", "UTC"))
            job = await system.api.create(job)
            end = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(days=1)
            start = end - timedelta(minutes=options.count)
            counted, outcome.count_seconds = await timed_backfill(
                system, backfill_request(job.name, start, end, validate_only=True)
            )
            print(f"  counted {counted.occurrence_count:,} in {outcome.count_seconds:.2f} s")
            made, outcome.write_seconds = await timed_backfill(
                system, backfill_request(job.name, start, end, request_id="bench")
            )
            print(f"  made {made.run_count:,} runs in {outcome.write_seconds:.2f} s")
            await watch(dsn, options)
            again = await system.api.stub.BackfillJob(
                backfill_request(
                    job.name,
                    start,
                    end,
                    request_id="bench-again",
                    overlap=svc.BACKFILL_OVERLAP_SKIP_RAN,
                ),
                metadata=system.api.metadata,
                timeout=300,
            )
            if again.run_count:
                outcome.problems.append(f"SKIP_RAN made {again.run_count} runs again")
            calls = await target.stop()
            await account(dsn, job, options, [c.idempotency_key for c in calls], outcome)
    finally:
        await drop_database(name)
    return outcome


async def watch(dsn: str, options: Options) -> None:
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=2)
    try:

        async def all_finished() -> bool:
            done = await pool.fetchval(
                "SELECT count(*) FROM runs "
                "WHERE origin LIKE 'BACKFILL:%' AND state IN ('SUCCEEDED', 'DEAD_LETTERED')"
            )
            return int(done) == options.count

        patience = options.lead + 120 + options.count / options.rate * 1.5
        await eventually(all_finished, patience, f"all {options.count:,} runs finished", 0.5)
    finally:
        await pool.close()


async def account(
    dsn: str, job: job_pb2.Job, options: Options, keys: list[str], outcome: Outcome
) -> None:
    """The runs against the target's calls, and the dispatch rate against the quota."""
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT r.nominal_time, r.origin, r.state, "
            "coalesce(r.eligible_time, r.effective_time) AS eligible, a.start_time "
            "FROM runs r LEFT JOIN run_attempts a ON a.run_id = r.run_id "
            "AND a.nominal_time = r.nominal_time AND a.number = 1 WHERE r.job_id = $1",
            uuid.UUID(job.job_id),
        )
    finally:
        await conn.close()
    backfilled = [r for r in rows if r["origin"] == "BACKFILL:bench"]
    if len(backfilled) != options.count:
        outcome.problems.append(f"{len(backfilled):,} runs recorded of {options.count:,}")
    if len({r["nominal_time"] for r in backfilled}) != len(backfilled):
        outcome.problems.append("an occurrence recorded twice")
    states = Counter(r["state"] for r in backfilled)
    if states != {"SUCCEEDED": options.count}:
        outcome.problems.append(f"run states {dict(states)}")
    called = Counter(k for k in keys if "/backfill/" in k)
    if len(called) != options.count or any(n > 1 for n in called.values()):
        repeated = sum(n - 1 for n in called.values())
        outcome.problems.append(f"{len(called):,} occurrences called, {repeated} repeated calls")
    early = sum(1 for r in backfilled if r["start_time"] and r["start_time"] < r["eligible"])
    if early:
        outcome.problems.append(f"{early} runs started before their team's quota let them go")
    eligible = sorted(r["eligible"] for r in backfilled)
    paced = eligible[options.burst :]
    if len(paced) > 1:
        span = (paced[-1] - eligible[0]).total_seconds()
        outcome.dispatch_rate = len(paced) / span if span > 0 else float("inf")
    if abs(outcome.dispatch_rate - options.rate) > PACE * options.rate:
        outcome.problems.append(
            f"dispatched {outcome.dispatch_rate:.2f}/s against a quota of {options.rate}/s"
        )


async def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--rate", type=int, default=20, help="dispatches a second")
    parser.add_argument("--burst", type=int, default=20)
    parser.add_argument(
        "--profile", type=Path, help="write the scheduler's cProfile statistics in this folder"
    )
    options = options_from(Options, parser.parse_args())
    print(f"bench/backfill {options} at {datetime.now(UTC):%Y-%m-%d %H:%M} UTC", flush=True)
    async with bench_workspace("duetime-backfill-") as (template, tmp):
        outcome = await run(options, template, tmp)
    print("\nsummary")
    print(f"  count call {outcome.count_seconds:.2f} s, write call {outcome.write_seconds:.2f} s")
    print(f"  dispatch rate {outcome.dispatch_rate:.2f}/s, quota {options.rate}/s (± 5 %)")
    print(f"  {'ok' if not outcome.problems else outcome.problems}")
    if outcome.problems:
        raise SystemExit(1)


if __name__ == "__main__":
    asyncio.run(main())
