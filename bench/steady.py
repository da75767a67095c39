"""bench/steady: the highest steady rate of runs whose p99 start lateness stays within 1 s,
beside PgQueuer.

A step at rate R seeds R x ``--interval`` interval jobs into a fresh database, their anchors
spread evenly over one interval, so R runs a second fall due from ``--lead`` seconds on; the
four services (``--workers`` workers) run them against ``bench.target`` (a process of its own)
on the bench's own Kafka broker. The jobs' team has no rate or in-flight quota (as in
``bench/herd``): the bench measures the engine, not the default quota of 1,000 runs a second;
``--team-quota default`` keeps the default, to measure what its admission costs a run.
After ``--warmup`` seconds a window of ``--duration`` seconds is measured: every run due in it
must be called within ``--tail`` seconds of its end.
A step passes when none is missing, repeated or early and the p99 lateness by the target's
clock is at most ``--p99`` seconds. The rate doubles from ``--start`` until a step fails, then
bisects (``--precision``); ``--rates`` runs given rates instead.

With ``--peer pgqueuer`` each system's steps run in the same invocation on PgQueuer too
(``bench/pgqueuer_peer.py``: one consumer process, a database of its own on the same server,
the same kind of target): one-off jobs due R a second, evenly, from ``--lead`` seconds on to
the window's end, enqueued ahead (their due times read back from ``execute_after``), each
POSTing once with its id as ``Idempotency-Key``, measured over the same window the same way.
With ``--rates`` each rate runs on both, who goes first alternating from rate to rate; without,
each system's rate is searched on its own, their steps interleaved. The summary gives the
ratio of their highest passing rates and of their CPU a run at the rates both ran.

Reported per step: lateness (target clock), CPU µs per run per process in the window, and what
PostgreSQL did per run in the system's own database: transactions (pg_stat_database: commits
and rollbacks), statements (pg_stat_statements, where the server loads it, as
``scripts/stack`` does: top-level statements a run and the costliest), rows inserted, updated
and deleted per table (pg_stat_user_tables, partitions under their parent); for Duetime also
Kafka records per run (dispatch topics, and consumer offset commits), and bytes stored per run
in runs and attempts after a VACUUM (beyond what the empty partitions take).
Results belong in bench/RESULTS.md.

    uv run --frozen python -m bench.steady [--start 100] [--duration 60] [--interval 10]
        [--rates 200 400] [--workers 2] [--p99 1.0] [--pg-sample] [--team-quota default]
        [--overlap SKIP]
    uv run --frozen --group bench python -m bench.steady --peer pgqueuer [--pgq-batch 100]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

from bench.harness import (
    OFFSETS_TOPIC,
    Call,
    Counts,
    CpuFigures,
    CpuMeter,
    HerdOutcome,
    QuerySampler,
    SeedJob,
    StatementCost,
    StatementStats,
    bench_parser,
    bench_system,
    bench_workspace,
    cpu_model,
    database_counts,
    herd_outcome,
    load,
    options_from,
    postgres_counts,
    profiled,
    quantiles,
    seed_jobs,
    shown,
    sleep_until,
    system_processes,
    target_process,
    writes_per_run,
)
from duetime_core.jobspec import OverlapPolicy
from duetime_core.runkey import RunKey
from duetime_infra.kafka.topics import DISPATCH_TOPICS
from duetime_infra.pg.teams.store import update_team_quota
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
    # The team's quota: "lifted" (no rate or in-flight limit) or "default" (the platform's).
    team_quota: str = "lifted"
    # The jobs' overlap policy: only ALLOW lets a worker start attempts ahead.
    overlap: OverlapPolicy = OverlapPolicy.ALLOW
    # Write each service's cProfile statistics in this folder, a file per step and service.
    profile: Path | None = None

    def first_due(self, now: datetime) -> datetime:
        """The whole second the first runs fall due at, ``lead`` seconds after ``now``."""
        return (now + timedelta(seconds=self.lead)).replace(microsecond=0)

    def window(self, first: datetime) -> tuple[datetime, datetime]:
        """The window measured, [w0, w1), after the warm-up from the first runs due."""
        w0 = first + timedelta(seconds=self.warmup)
        return w0, w0 + timedelta(seconds=self.duration)


@dataclass(frozen=True)
class Step:
    system: str
    rate: int
    outcome: HerdOutcome
    cpu: CpuFigures
    # Per run due in the window:
    transactions: float
    writes: dict[str, tuple[float, float, float]]  # table: inserted, updated, deleted
    statements: StatementCost | None

    @property
    def p99(self) -> float:
        return quantiles(self.outcome.late)[1] if self.outcome.late else float("inf")

    def passed(self, limit: float) -> bool:
        return not self.outcome.problems and self.p99 <= limit


@dataclass(frozen=True)
class Window:
    """What the system's database did over the window starting at ``start``: its counts at
    either end and the top-level statements' cost a run."""

    start: datetime
    before: Counts
    after: Counts
    statements: StatementCost | None


async def duetime_step(template: str, rate: int, options: Options, tmp: Path) -> Step:
    name = f"duetime_bench_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name, template=template)
    try:
        async with (
            target_process(tmp) as target,
            bench_system(
                dsn,
                workers=options.workers,
                scheduler_extra=profiled(options.profile, f"{rate}-scheduler"),
                relay_extra=profiled(options.profile, f"{rate}-relay"),
                worker_extra=profiled(options.profile, f"{rate}-worker"),
            ) as system,
        ):
            conn = await asyncpg.connect(dsn)
            try:
                every = timedelta(seconds=options.interval)
                t0 = options.first_due(await conn.fetchval("SELECT duetime_now()"))
                anchors = spread(t0, rate, t0 + every)
                url = target.url("/steady")
                empty = await history_bytes(conn)
                # One team's runs, as a team with that many jobs would be let: no rate or
                # in-flight limit of its own (the defaults hold a team to 1,000 a second),
                # unless its admission under the default quota is what is measured.
                if options.team_quota == "lifted":
                    await update_team_quota(conn, TEAM, {"runs_per_minute": 0, "max_running": 0})
                jobs = [SeedJob(TEAM, a, url, every, options.overlap) for a in anchors]
                ids = await seed_jobs(dsn, jobs)
                meter = CpuMeter(await system_processes(system, tmp / "kafka", target))
                w0, w1 = options.window(t0)
                due = occurrences(ids, anchors, every, w0, w1)
                print(f"  {len(anchors):,} jobs every {options.interval:g} s", flush=True)
                window = await measure(conn, dsn, meter, len(due), (w0, w1), options)

                async def all_succeeded() -> bool:
                    done = await conn.fetchval(
                        "SELECT count(*) FROM runs WHERE state = 'SUCCEEDED' "
                        "AND effective_time >= $1 AND effective_time < $2",
                        w0,
                        w1,
                    )
                    return int(done) >= len(due)

                await wait_for(all_succeeded, w1 + timedelta(seconds=options.tail))
                found = summarise_step("duetime", rate, due, await target.stop(), meter, window)
                dispatches, commits = kafka_per_run(window, len(due))
                stored = await stored_bytes(conn, empty)
                print(
                    f"  per run: Kafka {dispatches:.2f} dispatch records, {commits:.3f} "
                    f"offset commits; {stored:.0f} bytes stored in runs + attempts"
                )
            finally:
                await conn.close()
        return found
    finally:
        await drop_database(name)


async def pgqueuer_step(rate: int, options: Options, args: argparse.Namespace, tmp: Path) -> Step:
    """The step on PgQueuer: one-off jobs due ``rate`` a second from the lead to the window's
    end, all enqueued before the first is due."""
    # Imported here: PgQueuer is in the lock file's bench group only.
    from bench.pgqueuer_peer import PgqSettings, enqueue, running_pgqueuer

    settings = PgqSettings.from_args(args)
    print(f"  PgQueuer {settings}")
    async with running_pgqueuer(settings, tmp) as peer:
        conn = peer.conn
        t0 = options.first_due(await conn.fetchval("SELECT now()"))
        w0, w1 = options.window(t0)
        started = time.perf_counter()
        queued = await enqueue(conn, peer.target.url("/steady"), spread(t0, rate, w1))
        late = datetime.now(UTC) > w0
        print(
            f"  {len(queued):,} one-off jobs enqueued in {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        due = {key: at for key, at in queued.items() if w0 <= at < w1}
        meter = CpuMeter(peer.processes)
        window = await measure(conn, peer.dsn, meter, len(due), (w0, w1), options, postgres_counts)

        async def all_done() -> bool:
            left = await conn.fetchval("SELECT count(*) FROM pgqueuer WHERE execute_after < $1", w1)
            return int(left) == 0

        await wait_for(all_done, w1 + timedelta(seconds=options.tail))
        found = summarise_step("pgqueuer", rate, due, await peer.target.stop(), meter, window)
        if late:
            found.outcome.problems.append("the enqueue ran into the window: raise --lead")
        return found


async def measure(
    conn: asyncpg.Connection,
    dsn: str,
    meter: CpuMeter,
    runs: int,
    window: tuple[datetime, datetime],
    options: Options,
    counts: Callable[[asyncpg.Connection], Awaitable[Counts]] = database_counts,
) -> Window:
    """CPU (``meter``), the database's ``counts`` and its statements over the window, for
    ``runs`` runs due in it."""
    w0, w1 = window
    await sleep_until(w0)
    meter.start()
    before = await counts(conn)
    statements = StatementStats(dsn)
    await statements.start()
    sampler = QuerySampler(dsn) if options.pg_sample else None
    async with sampler or contextlib.nullcontext():
        await sleep_until(w1)
    meter.stop()
    after = await counts(conn)
    if sampler is not None:
        sampler.report()
    return Window(w0, before, after, await statements.report(runs, top=8))


async def wait_for(done: Callable[[], Awaitable[bool]], deadline: datetime) -> None:
    """Until ``done``, or the deadline: what is left then shows as runs never called."""
    while datetime.now(UTC) < deadline:
        if await done():
            return
        await asyncio.sleep(0.5)


def summarise_step(
    system: str,
    rate: int,
    due: Mapping[str, datetime],
    calls: Sequence[Call],
    meter: CpuMeter,
    window: Window,
) -> Step:
    """The step's figures a run due in the window; calls of runs due before or after it are
    not this step's."""
    runs = len(due)
    cpu = meter.report(runs, split=False)
    ours = [c for c in calls if c.idempotency_key in due]
    outcome = herd_outcome(f"{system}@{rate}/s", due, ours, window.start, cpu)
    before, after = window.before, window.after
    writes = writes_per_run(before, after, runs)
    transactions = (after.transactions - before.transactions) / runs
    print(f"  per run: {transactions:.2f} transactions; rows written {shown(writes)}")
    return Step(system, rate, outcome, cpu, transactions, writes, window.statements)


def kafka_per_run(window: Window, runs: int) -> tuple[float, float]:
    """Dispatch records and consumer offset commits written to Kafka a run."""
    written = Counter({tp.topic: 0 for tp in window.after.kafka})
    for tp, end in window.after.kafka.items():
        written[tp.topic] += end - window.before.kafka.get(tp, 0)
    dispatches = sum(written[t] for t in DISPATCH_TOPICS.values())
    return dispatches / runs, written[OFFSETS_TOPIC] / runs


def spread(start: datetime, rate: int, end: datetime) -> list[datetime]:
    """Due times ``rate`` a second, evenly, from ``start`` until ``end`` (exclusive), each a
    whole millisecond after ``start``, as a schedule's would be."""
    span = (end - start) // timedelta(microseconds=1)
    count = -(-span * rate // 1_000_000)
    return [start + timedelta(milliseconds=i * 1000 // rate) for i in range(count)]


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


def next_rate(passed: int | None, failed: int | None, rate: int) -> int:
    """Doubling until a failure, then bisecting."""
    if failed is None:
        return rate * 2
    if passed is None:
        return max(1, failed // 2)
    return (passed + failed) // 2


class Search:
    """One system's rates: those given, in turn; or, none given, doubling from ``start``
    until a step fails, then bisecting until the highest rate passed and the lowest failed are
    within ``precision`` of it, at most ``max_steps`` steps."""

    def __init__(
        self, rates: Sequence[int] | None, start: int, precision: float, max_steps: int
    ) -> None:
        self.passed: int | None = None
        self._failed: int | None = None
        self._given = list(rates or [])
        self._next = start
        self._precision = precision
        self._max_steps = max_steps
        self._steps = 0

    def rate(self) -> int | None:
        """The next step's rate; None once the search is done."""
        if self._given:
            return self._given[self._steps] if self._steps < len(self._given) else None
        passed, failed = self.passed, self._failed
        if passed and failed and failed - passed <= max(1, self._precision * passed):
            return None
        return self._next if self._steps < self._max_steps else None

    def record(self, rate: int, passed: bool) -> None:
        self._steps += 1
        if passed:
            self.passed = max(rate, self.passed or 0)
        else:
            self._failed = min(rate, self._failed or rate)
        self._next = next_rate(self.passed, self._failed, rate)


async def run(args: argparse.Namespace, options: Options, template: str, tmp: Path) -> None:
    systems = ["duetime", *args.peer]
    searches = {s: Search(args.rates, args.start, args.precision, args.max_steps) for s in systems}
    steps: list[Step] = []
    for turn in itertools.count():
        # Alternate who goes first, so neither always meets a warmer machine.
        order = systems if turn % 2 == 0 else systems[::-1]
        todo = [(s, rate) for s in order if (rate := searches[s].rate()) is not None]
        if not todo:
            break
        for system, rate in todo:
            print(f"step {len(steps) + 1}: {rate:,} runs/s on {system} ({load()})", flush=True)
            if system == "duetime":
                found = await duetime_step(template, rate, options, tmp)
            else:
                found = await pgqueuer_step(rate, options, args, tmp)
            steps.append(found)
            ok = found.passed(options.p99)
            searches[system].record(rate, ok)
            print(f"  p99 {found.p99:.2f} s: {'PASS' if ok else 'FAIL'}", flush=True)
    report(steps, options, {s: search.passed for s, search in searches.items()})


def report(steps: list[Step], options: Options, best: dict[str, int | None]) -> None:
    print(f"\nsummary ({cpu_model()}; {load()} at the end)")
    for s in sorted(steps, key=lambda s: list(best).index(s.system)):
        print(step_line(s, options.p99))
    print(
        f"  highest rate with p99 <= {options.p99:g} s: "
        + ", ".join(f"{system} {rate or 'none'}" for system, rate in best.items())
        + " runs/s"
    )
    for peer in list(best)[1:]:
        ours, theirs = best["duetime"], best[peer]
        if ours and theirs:
            print(f"  duetime / {peer}, highest rate: {ours / theirs:.2f}")
        for rate in sorted({s.rate for s in steps if s.system == peer}):
            pairs = zip(
                (s for s in steps if s.system == "duetime" and s.rate == rate),
                (s for s in steps if s.system == peer and s.rate == rate),
                strict=False,
            )
            for a, b in pairs:
                print(
                    f"  at {rate:,}/s, duetime / {peer}, CPU µs a run: {a.cpu.after:,.0f} / "
                    f"{b.cpu.after:,.0f} = {a.cpu.after / b.cpu.after:.2f} (own db: "
                    f"{a.cpu.after_own:,.0f} / {b.cpu.after_own:,.0f} = "
                    f"{a.cpu.after_own / b.cpu.after_own:.2f})"
                )


def step_line(s: Step, limit: float) -> str:
    p50, _, top = quantiles(s.outcome.late) if s.outcome.late else (0.0, 0.0, 0.0)
    groups = ", ".join(f"{name.strip()} {a:.0f}" for name, (_, a) in s.cpu.groups.items() if a >= 1)
    statements = (
        f", {s.statements.statements:.1f} statements {s.statements.micros:,.0f} µs"
        if s.statements
        else ""
    )
    problems = f" {s.outcome.problems}" if s.outcome.problems else ""
    return (
        f"  {s.system:<9} {s.rate:>6,}/s p50 {p50:.2f} p99 {s.p99:.2f} max {top:.2f} s "
        f"{'PASS' if s.passed(limit) else 'FAIL'}{problems}; CPU µs/run {s.cpu.after:.0f} "
        f"({groups}); a run {s.transactions:.2f} xacts{statements}; {s.outcome.load}"
    )


async def main() -> None:
    parser = bench_parser(__doc__, pg_sample=True, pgqueuer=True, overlap=True)
    parser.add_argument("--start", type=int, default=100)
    parser.add_argument("--rates", type=int, nargs="+", help="run these rates, no search")
    parser.add_argument("--precision", type=float, default=0.1)
    parser.add_argument("--max-steps", type=int, default=10)
    parser.add_argument("--interval", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--tail", type=float, default=30.0)
    parser.add_argument("--p99", type=float, default=1.0)
    parser.add_argument(
        "--peer", nargs="+", default=[], choices=["pgqueuer"], help="run each step on these too"
    )
    parser.add_argument(
        "--profile", type=Path, help="write each service's cProfile statistics in this folder"
    )
    parser.add_argument(
        "--team-quota",
        choices=["lifted", "default"],
        default="lifted",
        help="the team's quota: none (lifted) or the platform's default (1,000 runs a second)",
    )
    args = parser.parse_args()
    options = options_from(Options, args)
    print(f"bench/steady at {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {cpu_model()}; {load()}")
    print(f"  {options}", flush=True)
    async with bench_workspace("duetime-steady-") as (template, tmp):
        await run(args, options, template, tmp)


if __name__ == "__main__":
    asyncio.run(main())
