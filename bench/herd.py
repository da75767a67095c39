"""bench/herd: the :00 herd — N runs due at the same instant, end to end, beside a peer.

Each case seeds N one-off HTTP jobs straight into a fresh database (COPY), all due at one
instant ``--lead`` seconds later (70: past the claim's one-minute horizon, as a herd of crons
stored long before its instant is; ``--lead 15`` is a herd created at the last moment, whose
claim and starts must fit in 15 s), so the scheduler's look-ahead, the relay and the workers
are in their steady state when it comes. The four services run as processes (api, scheduler,
relay, ``--workers`` workers) on a Kafka broker of the bench's own and call ``bench.target``, an
HTTP target in a process of its own that records when each call arrives. With ``--peer
pgqueuer`` every case is also given to PgQueuer (``bench/pgqueuer_peer.py``: one consumer
process, same server, same kind of target), the two interleaved, and the ratio printed; with
``--peer floor`` (aiohttp) and ``floor-pyreqwest`` (Duetime's worker's client) also to bare
clients that only wait for the instant and call (``bench/herd_floor.py``): the least the target
and the calls cost on this machine.

Reported per case: start lateness by the target's clock (p50 / p99 / max), runs over 5 s,
the drain (the instant to the last call), calls per second, EARLY or missing calls (bugs: must
be zero), and CPU µs per run by process before and after the instant; for Duetime also the
lateness by the scheduler's clock (the attempt's start) and the hops (claimed, published).
Results belong in bench/RESULTS.md.

    uv run --frozen python -m bench.herd [--runs 1000 10000] [--repeat 1] [--workers 2]
        [--lead 70] [--lookahead 10] [--credit N] [--concurrency N] [--profile DIR]
        [--sign off|hmac|jwt] [--overlap ALLOW|SKIP|BUFFER_ONE|CANCEL_PREVIOUS]
    uv run --frozen --group bench python -m bench.herd --peer pgqueuer [--pgq-batch 100]
    uv run --frozen --group bench python -m bench.herd --peer pgqueuer floor floor-pyreqwest
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

from bench.harness import (
    PROMISE,
    Counts,
    CpuMeter,
    HerdOutcome,
    QuerySampler,
    SeedJob,
    StatementStats,
    TargetProcess,
    bench_parser,
    bench_system,
    bench_workspace,
    cpu_model,
    database_counts,
    herd_outcome,
    load,
    ms,
    options_from,
    per_second,
    profiled,
    quantiles,
    seed_jobs,
    shown,
    sleep_until,
    system_processes,
    target_process,
    writes_per_run,
)
from bench.herd_floor import FLOOR_PEERS, floor_case
from duetime_core.jobspec import CallSigning, OverlapPolicy
from duetime_core.runkey import RunKey
from duetime_infra.kafka.topics import DISPATCH_TOPICS
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.teams.signing_keys import add_signing_key
from duetime_infra.pg.teams.store import update_team, update_team_quota
from testkit.databases import create_database, drop_database
from testkit.fleet import eventually
from testkit.kafka import Offsets, end_offsets, read_between, shared_bootstrap
from testkit.secrets import secret_box
from testkit.system import TEAM, System


@dataclass(frozen=True)
class Setup:
    workers: int
    lead: float
    # Execution slots a worker; None: the worker's own default (DUETIME_WORKER_CONCURRENCY).
    concurrency: int | None
    lookahead: float
    # The scheduler's DUETIME_DISPATCH_CREDIT; None: its default.
    credit: int | None = None
    profile: Path | None = None
    # Write each service's output (its JSON log lines) in this folder.
    logs: Path | None = None
    # Sample the statements running in the database over the herd (QuerySampler).
    pg_sample: bool = False
    # How the herd's calls are signed, as the team's default: off, hmac (Standard Webhooks)
    # or jwt (an ES256 ID token per attempt).
    sign: str = "off"
    # The herd's jobs' overlap policy: only ALLOW lets a worker start attempts ahead.
    overlap: OverlapPolicy = OverlapPolicy.ALLOW


async def duetime_case(template: str, runs: int, setup: Setup, tmp: Path) -> HerdOutcome:
    name = f"duetime_bench_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name, template=template)
    slots = (
        {} if setup.concurrency is None else {"DUETIME_WORKER_CONCURRENCY": f"{setup.concurrency}"}
    )
    try:
        async with (
            target_process(tmp) as target,
            bench_system(
                dsn,
                workers=setup.workers,
                scheduler_extra={
                    "DUETIME_CLAIM_LOOKAHEAD": str(setup.lookahead),
                    **(
                        {}
                        if setup.credit is None
                        else {"DUETIME_DISPATCH_CREDIT": f"{setup.credit}"}
                    ),
                    **profiled(setup.profile, f"{runs}-scheduler"),
                },
                relay_extra=profiled(setup.profile, f"{runs}-relay"),
                worker_extra={**slots, **profiled(setup.profile, f"{runs}-worker")},
            ) as system,
        ):
            meter = CpuMeter(await system_processes(system, tmp / "kafka", target))
            outcome = await measure(system, target, runs, setup, meter)
        if setup.logs is not None:
            write_logs(system, setup.logs / f"{runs}-{name}")
        return outcome
    finally:
        await drop_database(name)


def write_logs(system: System, folder: Path) -> None:
    """Each service's output, a file each, once the services have stopped."""
    folder.mkdir(parents=True, exist_ok=True)
    services = {"scheduler": system.scheduler, "relay": system.relay, **system.workers}
    for label, service in services.items():
        (folder / f"{label}.log").write_text("\n".join(service.output) + "\n")
    print(f"  logs in {folder}")


async def measure(
    system: System, target: TargetProcess, runs: int, setup: Setup, meter: CpuMeter
) -> HerdOutcome:
    pool = await asyncpg.create_pool(system.db_dsn, min_size=1, max_size=2)
    try:
        now: datetime = await pool.fetchval("SELECT duetime_now()")
        offset: timedelta = await pool.fetchval('SELECT "offset" FROM duetime_clock')
        assert offset == timedelta(0), "the bench compares the database clock with the host's"
        # Whole milliseconds, as a cron second would be.
        at = (now + timedelta(seconds=setup.lead)).replace(microsecond=0) + timedelta(seconds=1)
        start = await end_offsets(shared_bootstrap(), sorted(DISPATCH_TOPICS.values()))
        t0 = time.perf_counter()
        # One team's herd, as a team with that many jobs due at once would be let: no rate or
        # in-flight limit of its own (the defaults hold a herd past 20,000 at 1,000 a second).
        async with pool.acquire() as conn:
            await update_team_quota(conn, TEAM, {"runs_per_minute": 0, "max_running": 0})
            await sign_calls(conn, setup.sign)
        job = SeedJob(TEAM, at, target.url("/herd"), overlap=setup.overlap)
        await seed_jobs(system.db_dsn, [job] * runs)
        seeded = time.perf_counter() - t0
        print(
            f"  seeded {runs:,} jobs in {seeded:.1f} s; due in {(at - now).total_seconds():.1f} s"
        )
        # CPU is counted from the seed (a herd's look-ahead grows to claim it at once) to the
        # last outcome.
        meter.start()
        counts = [await database_counts_of(pool)]
        statements = StatementStats(system.db_dsn) if setup.pg_sample else None
        marking = asyncio.create_task(mark_the_instant(meter, at, pool, counts, statements))

        async def all_finished() -> bool:
            done = await pool.fetchval(
                "SELECT count(*) FROM runs WHERE state IN ('SUCCEEDED', 'DEAD_LETTERED')"
            )
            return int(done) == runs

        sampler = QuerySampler(system.db_dsn) if setup.pg_sample else None
        async with sampler or contextlib.nullcontext():
            await eventually(all_finished, setup.lead + 180, f"all {runs} runs finished", 0.5)
        await marking
        meter.stop()
        counts.append(await database_counts_of(pool))
        if sampler is not None:
            sampler.report()
        if statements is not None:
            await statements.report(runs)
        calls = [c for c in await target.stop() if c.path == "/herd"]
        cpu = meter.report(runs)
        rows = await pool.fetch(
            "SELECT r.run_id, r.job_id, r.nominal_time, r.effective_time, r.create_time, "
            "r.state, a.number, a.start_time, a.worker_id "
            "FROM runs r JOIN run_attempts a USING (run_id, nominal_time) ORDER BY a.start_time"
        )
        first = {r["run_id"]: r for r in rows if r["number"] == 1}
        due = {
            RunKey.scheduled(r["job_id"], r["nominal_time"]).canonical(): r["effective_time"]
            for r in first.values()
        }
        outcome = herd_outcome("duetime", due, calls, at, cpu)
        if {r["state"] for r in rows} != {"SUCCEEDED"} or len(first) != runs:
            outcome.problems.append(f"{len(rows):,} attempts, {len(first):,} first ones")
        await report_scheduler(pool, list(first.values()), at, start)
        before, instant, end = counts
        for when, (a, b) in (("before", (before, instant)), ("after", (instant, end))):
            print(
                f"  per run {when} the instant: {(b.transactions - a.transactions) / runs:.2f} "
                f"transactions; rows written {shown(writes_per_run(a, b, runs))}"
            )
        return outcome
    finally:
        await pool.close()


async def sign_calls(conn: Conn, sign: str) -> None:
    """The team's calls signed as ``sign`` says: a key of its own and its default."""
    if sign == "off":
        return
    await add_signing_key(conn, secret_box(), TEAM)
    signing = CallSigning.WEBHOOK if sign == "hmac" else CallSigning.ID_TOKEN
    await update_team(
        conn, TEAM, display_name=None, notification_url=None, default_call_signing=signing
    )


async def mark_the_instant(
    meter: CpuMeter,
    at: datetime,
    pool: asyncpg.Pool[asyncpg.Record],
    counts: list[Counts],
    statements: StatementStats | None = None,
) -> None:
    """Splits the CPU and the database's writes at the instant (PostgreSQL's statistics lag a
    backend's work by up to a second)."""
    await sleep_until(at)
    meter.at_instant()
    counts.append(await database_counts_of(pool))
    if statements is not None:
        await statements.start()


async def database_counts_of(pool: asyncpg.Pool[asyncpg.Record]) -> Counts:
    async with pool.acquire() as conn:
        return await database_counts(conn)


async def report_scheduler(
    pool: asyncpg.Pool[asyncpg.Record],
    first: list[asyncpg.Record],
    at: datetime,
    start: Offsets,
) -> None:
    """What the scheduler recorded: each run's first attempt's start (the database clock; for
    one started ahead, its call's), how many were started ahead, and where the time went before
    the instant."""
    starts = [(r["start_time"] - r["effective_time"]).total_seconds() for r in first]
    early = sum(x < 0 for x in starts)
    over = sum(x > PROMISE for x in starts)
    ahead = await pool.fetchval("SELECT count(*) FILTER (WHERE early) FROM run_attempts")
    claimed = [(r["create_time"] - at).total_seconds() for r in first]
    published = await publish_times(at, start)
    print(f"  by the scheduler's clock: EARLY {early}; over {PROMISE:.0f} s {over:,}")
    print(f"  attempts started ahead of their time: {ahead:,} of {len(first):,} runs")
    print(f"  runs started per second after the instant: {per_second(starts)}")
    print(f"  start lateness (scheduler): {ms(starts)}")
    print(f"  hops, relative to the instant: claimed {ms(claimed)}")
    print(f"                                 published {ms(published)}")
    print(f"  dispatches published: {len(published):,} for {len(first):,} runs")
    failed = await pool.fetch(
        "SELECT outcome, left(error, 80) AS error, count(*) AS n FROM run_attempts"
        " WHERE outcome <> 'SUCCEEDED' GROUP BY 1, 2 ORDER BY n DESC LIMIT 5"
    )
    for row in failed:
        print(f"  attempts ended {row['outcome']}: {row['n']:,} ({row['error']})")


async def publish_times(at: datetime, start: Offsets) -> list[float]:
    """When each of this herd's dispatches reached Kafka (the record's timestamp, read from
    the offsets before the seed on), relative to the instant."""
    bootstrap = shared_bootstrap()
    ends = await end_offsets(bootstrap, sorted(DISPATCH_TOPICS.values()))
    records = await read_between(bootstrap, start, ends)
    return [r.timestamp_ms / 1000 - at.timestamp() for r in records]


def summarise(outcomes: list[HerdOutcome]) -> None:
    """Every case, then per herd size the ratios of Duetime to the peer in the same
    invocation: p99 lateness (target clock) and CPU per run after the instant."""
    print(f"\nsummary ({cpu_model()}; {load()} at the end)")
    print(
        f"  {'runs':>7} {'peer':<9} {'p50 s':>6} {'p99 s':>6} {'max s':>6} {'drain s':>7} "
        f"{'over 5 s':>8} {'CPU µs/run after (own db)':>25}  load then"
    )
    for o in outcomes:
        p50, p99, top = quantiles(o.late)
        print(
            f"  {o.runs:>7,} {o.peer:<9} {p50:6.2f} {p99:6.2f} {top:6.2f} {o.drain:7.2f} "
            f"{o.over_promise:8,} {o.cpu.after:15.0f} ({o.cpu.after_own:7.0f})  {o.load}"
            + (f"  PROBLEMS {o.problems}" if o.problems else "")
        )
    for runs in sorted({o.runs for o in outcomes}):
        ours = [o for o in outcomes if o.runs == runs and o.peer == "duetime"]
        for peer in dict.fromkeys(o.peer for o in outcomes if o.peer != "duetime"):
            theirs = [o for o in outcomes if o.runs == runs and o.peer == peer]
            if ours and theirs:
                print_ratios(runs, peer, list(zip(ours, theirs, strict=False)))


def print_ratios(runs: int, peer: str, pairs: list[tuple[HerdOutcome, HerdOutcome]]) -> None:
    late = [quantiles(a.late)[1] / quantiles(b.late)[1] for a, b in pairs]
    cpu = [a.cpu.after_own / b.cpu.after_own for a, b in pairs]
    print(
        f"  {runs:,} runs, duetime / {peer} (each pair from one round): p99 "
        f"{' '.join(f'{x:.2f}' for x in late)} (median {statistics.median(late):.2f}); "
        f"CPU after the instant (own db) {' '.join(f'{x:.2f}' for x in cpu)}"
    )


async def main() -> None:
    parser = bench_parser(__doc__, pg_sample=True, pgqueuer=True, overlap=True)
    parser.set_defaults(lead=70.0)
    parser.add_argument("--runs", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--repeat", type=int, default=1, help="cases of each size, interleaved")
    parser.add_argument(
        "--concurrency", type=int, help="execution slots a worker (default: the worker's own)"
    )
    parser.add_argument("--lookahead", type=float, default=10.0, help="the scheduler's, seconds")
    parser.add_argument("--credit", type=int, help="the scheduler's dispatch credit")
    parser.add_argument(
        "--profile", type=Path, help="write each service's cProfile statistics in this folder"
    )
    parser.add_argument("--logs", type=Path, help="write each service's output in this folder")
    parser.add_argument(
        "--sign",
        choices=["off", "hmac", "jwt"],
        default="off",
        help="sign the herd's calls: Standard Webhooks (hmac) or an ES256 ID token (jwt)",
    )
    parser.add_argument(
        "--peer",
        nargs="+",
        default=[],
        choices=["pgqueuer", *FLOOR_PEERS],
        help="run each case on these too (floor: bare clients, bench/herd_floor.py)",
    )
    args = parser.parse_args()
    setup = options_from(Setup, args)
    print(f"bench/herd at {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {cpu_model()}; {load()}")
    outcomes: list[HerdOutcome] = []
    async with bench_workspace("duetime-herd-") as (template, tmp):
        for runs in args.runs:
            for case in range(args.repeat):
                peers = ["duetime", *args.peer]
                # Alternate who goes first, so neither always meets a warmer machine.
                for peer in peers if case % 2 == 0 else peers[::-1]:
                    print(f"herd of {runs:,} runs on {peer} ({load()})", flush=True)
                    if peer == "duetime":
                        outcomes.append(await duetime_case(template, runs, setup, tmp))
                    elif peer in FLOOR_PEERS:
                        window = args.lookahead + 1
                        floor = floor_case(peer, runs, args.workers, args.lead, window, tmp)
                        outcomes.append(await floor)
                    else:
                        outcomes.append(await peer_case(runs, args, tmp))
    summarise(outcomes)


async def peer_case(runs: int, args: argparse.Namespace, tmp: Path) -> HerdOutcome:
    # Imported here: PgQueuer is in the lock file's bench group only.
    from bench.pgqueuer_peer import PgqSettings, pgqueuer_case

    settings = PgqSettings.from_args(args)
    print(f"  PgQueuer {settings}")
    return await pgqueuer_case(runs, args.lead, args.lookahead + 1, settings, tmp)


if __name__ == "__main__":
    asyncio.run(main())
