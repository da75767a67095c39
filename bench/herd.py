"""bench/herd: the :00 herd — N runs due at the same instant, end to end.

Each case seeds N one-off HTTP jobs straight into a fresh database (COPY), all due at one
instant ``--lead`` seconds later, so the scheduler's look-ahead, the relay and the workers are in
their steady state when it comes. The four services run as separate processes (api, scheduler,
relay, ``--workers`` workers) on a Kafka broker of the bench's own (so no other test's consumers
see the herd, and the herd sees no one else's), and call a real local HTTP target that records
when each call arrives. Reported, per case:

- start lateness (actual start minus effective time), p50 / p99 / max, both as the scheduler
  recorded the attempt's start (database clock) and as the target saw the call arrive;
- the drain time: the instant to the last target call;
- EARLY starts (before the effective time, by either clock): a bug, must be zero;
- runs starting more than 5 s late (the promise), and where the time went, hop by hop:
  claim (run created) → published to Kafka (record timestamp) → attempt start → target call.

    uv run python -m bench.herd [--runs 1000 10000] [--workers 2] [--lead 15]
                                [--concurrency N] [--lookahead 5] [--profile DIR]

Also printed: CPU µs per run of each process (the services, every PostgreSQL process, the
bench's Kafka broker, the bench itself with the target) before and after the instant, and runs
started and target calls per second after it. ``--profile DIR`` runs the services under cProfile.

Measured on this 2-core machine, shared with other engineers' test runs, two workers, start
lateness p99 by the scheduler / by the target, and the drain; no run ever started early:

                      1,000 runs                  10,000 runs
    before (3ebc629)  6.0 / 6.0 s, drain 6.1 s    70 / 71 s, drain 72 s (92% over 5 s)
    after, 64 slots   1.1-1.9 / 1.1-1.9 s         10.4-11.3 / 10.4-11.4 s (64% over 5 s)
    after, 2000 slots 0.18-0.36 / 0.75-1.34 s,    5.9-7.7 / 6.8-8.1 s, drain 6.9-8.1 s
                      drain 0.75-1.34 s           (15-33% of runs over 5 s)
    again (394aeea),  0.24-0.39 / 1.0-1.4 s       7.0-9.9 / 7.8-11.5 s (20-42% over 5 s)
      3 runs, load 1.9-2.9
    now (9f4c71f),    0.16-0.37 / 0.7-1.2 s       6.5-11.0 / 7.3-11.9 s (20-54% over 5 s)
      5 runs, load 1.6-3.3
    that worker       0.11-0.26 / 0.65-0.72 s     6.0-6.1 / 6.6-6.8 s, drain 6.6-6.8 s
      again (c69d149),                            (10-19% over 5 s)
      2 runs, load 1.3-2.5, no other test running
    worker tuned      0.33-0.40 / 0.52-0.77 s     5.0-5.2 / 5.2-5.3 s, drain 5.2-5.4 s
      (3490fcd), 3 runs,                          (0.6-3.6% over 5 s)
      interleaved with the 2 above, load 1.0-2.5
    every service's   0.27-0.30 / 0.59-0.60 s     4.4-5.0 / 4.5-5.1 s, drain 4.5-5.2 s
      collector tuned                             (0, 0 and 1.1% of runs over 5 s)
      (c192e4c), 3 runs at 10,000 and 2 at 1,000, load 0.2-1.4, no other test running

(2,000 slots a worker from "after, 2000 slots" on, the worker's default since c004fb5, and the
bench's default is now the worker's own (it was 64); from "again (394aeea)" on with the
target's accept queue at 4,096: at aiohttp's default of 128 about a thousand connects a herd
were dropped and retried a second later. The scheduler's p99 at 1,000 rose with the tuned
worker because its starts are recorded later, in smaller batches; the target's fell.) CPU µs
per run at 10,000, mean of the runs in each row, before the instant / after it:

                  scheduler  workers (both)  PostgreSQL  Kafka  relay  target   total
    394aeea       149 / 229      79 / 647     116 / 139  79/43  40/17   1/151   464 / 1225
    9f4c71f       138 / 210      67 / 742     114 / 107  83/43  38/17   1/193   442 / 1312
    c69d149 again 116 / 166      64 / 614     104 / 104  77/26  35/10   1/158   396 / 1077
    3490fcd       124 / 183      42 / 325     106 /  91  72/23  36/ 7   1/ 97   381 /  727
    c192e4c       103 / 152      36 / 313     107 /  82  67/20  34/ 7   1/ 94   338 /  671

(The 9f4c71f row was measured while other test runs shared the cores; "c69d149 again" is that
commit's worker (put first on the services' PYTHONPATH) under this bench, on an otherwise idle
machine, interleaved with the 3490fcd runs.)

Where the time went before: every dispatched message held one of the worker's 64 slots while it
waited (TOO_EARLY) for its instant, and each run was its own StartAttempt and CompleteAttempt
transaction (~170 runs/s end to end). Now a message not yet due waits without a slot on the
server's clock, starts go in batches of 100 and reports of 500 (StartAttempts /
CompleteAttempts, one transaction each), beats asked for by new attempts are spaced, calls to
one host reuse at most 256 keep-alive connections, per-run log lines are DEBUG under a
once-a-second summary, and every service's garbage collector runs rarely over a frozen start-up
heap (it was a third of a worker's CPU). The claim of 10,000 runs ends 3-4 s before the instant
(5 s look-ahead), so the look-ahead is not what makes runs late. After the instant a run costs
about 670 µs of CPU across all processes (it was 1,225): 10,000 runs need ~3.4 s of both cores,
and the machine also carries PostgreSQL, Kafka, the target and the bench, so at 10,000 the 5 s
promise is met only just (p99 4.4-5.0 s) and the 1 s aim is not: it needs under ~200 µs a run
after the instant. The next costs to cut: the workers (~155 µs a run each: aiohttp's request
and response, three tasks a run, the batches) and the scheduler (~150 µs a run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

from duetime_core import jobspec
from duetime_core.runkey import RunKey, partition_of
from duetime_infra.codec.spec_json import spec_to_json
from duetime_infra.kafka.topics import DEAD_LETTER_TOPIC, DISPATCH_TOPICS
from tests.support.databases import create_database, drop_database, migrated_template
from tests.support.fleet import eventually
from tests.support.http_target import HttpTarget, http_target
from tests.support.kafka import create_topics, end_offsets, private_kafka, read_between
from tests.support.system import TEAM, System, running_system

PROMISE = timedelta(seconds=5)
# Dispatch topic partitions on the bench's broker: enough for two workers to share evenly.
TOPIC_PARTITIONS = 6


async def seed(dsn: str, runs: int, at: datetime, url: str) -> None:
    """N one-off jobs due at ``at``, written as the API would store them."""
    conn = await asyncpg.connect(dsn)
    try:
        spec = jobspec.JobSpec(
            display_name="herd",
            schedule=jobspec.AtInstant(at),
            target=jobspec.HttpTarget(jobspec.HttpMethod.POST, url),
            attempt_timeout=timedelta(seconds=30),
        )
        spec_text = json.dumps(spec_to_json(spec))
        rng = random.Random(11)
        records = []
        for _ in range(runs):
            job_id = uuid.UUID(int=rng.getrandbits(128), version=4)
            records.append((job_id, TEAM, partition_of(job_id), "ACTIVE", spec_text, at, at))
        await conn.copy_records_to_table(
            "jobs",
            records=records,
            columns=[
                "job_id",
                "team_id",
                "partition",
                "state",
                "spec",
                "next_run_time",
                "next_effective_time",
            ],
        )
        await conn.execute(
            "INSERT INTO job_versions (job_id, version, spec) "
            "SELECT job_id, version, spec FROM jobs"
        )
        await conn.execute("ANALYZE jobs")
    finally:
        await conn.close()


def quantiles(values: Sequence[float]) -> tuple[float, float, float]:
    """p50, p99 and max of ``values`` (nearest rank)."""
    ordered = sorted(values)

    def rank(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]

    return rank(0.5), rank(0.99), ordered[-1]


def ms(values: Sequence[float]) -> str:
    p50, p99, top = quantiles(values)
    return f"p50 {p50 * 1000:7.0f} ms  p99 {p99 * 1000:7.0f} ms  max {top * 1000:7.0f} ms"


@dataclass(frozen=True)
class Result:
    runs: int
    p99_start: float
    p99_call: float
    drain: float
    early: int


@dataclass(frozen=True)
class Setup:
    workers: int
    lead: float
    # Execution slots a worker; None: the worker's own default (DUETIME_WORKER_CONCURRENCY).
    concurrency: int | None
    lookahead: float
    profile: Path | None = None


_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def pids_where(match: Callable[[str, str], bool]) -> list[int]:
    """Processes whose (command name, command line) match."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if match(comm, cmdline):
            found.append(int(entry.name))
    return found


class CpuMeter:
    """CPU time per process over the herd: each service, the bench's Kafka broker, every
    PostgreSQL process on the machine (other users' queries count too) and this process (the
    HTTP target and the harness)."""

    def __init__(self, system: System, kafka_dir: Path) -> None:
        self._groups: dict[str, list[int]] = {
            "scheduler": [system.scheduler.process.pid],
            "relay": [system.relay.process.pid],
            **{f"worker {w}": [s.process.pid] for w, s in system.workers.items()},
            "postgresql (all)": pids_where(lambda comm, _: comm.startswith("postgres")),
            "kafka broker": pids_where(lambda _, cmd: str(kafka_dir) in cmd),
            "bench + target": [os.getpid()],
        }
        self.start()

    def start(self) -> None:
        self._start = self._read()
        self._started = time.perf_counter()
        self._instant, self._at = self._start, self._started

    def at_instant(self) -> None:
        """Splits the count: before the instant the claim, the publish and the consumption;
        after it the starts, the target calls and the reports."""
        self._instant = self._read()
        self._at = time.perf_counter()

    def _read(self) -> dict[str, float]:
        return {name: sum(map(cpu_seconds, pids)) for name, pids in self._groups.items()}

    def report(self, runs: int) -> None:
        end = self._read()
        now = time.perf_counter()
        before, after = self._at - self._started, now - self._at
        print(
            f"  CPU µs per run: before the instant ({before:.1f} s wall) / after it "
            f"({after:.1f} s wall, up to {2 * after / runs * 1e6:.0f} µs/run on 2 cores)"
        )
        totals = [0.0, 0.0]
        for name, used in end.items():
            spent = (self._instant[name] - self._start[name], used - self._instant[name])
            totals = [t + s for t, s in zip(totals, spent, strict=True)]
            print(f"    {name:<18} {spent[0] / runs * 1e6:6.0f} / {spent[1] / runs * 1e6:6.0f}")
        print(f"    {'total':<18} {totals[0] / runs * 1e6:6.0f} / {totals[1] / runs * 1e6:6.0f}")


async def run_case(template: str, runs: int, setup: Setup, tmp: Path) -> Result:
    name = f"duetime_bench_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name, template=template)
    try:
        async with http_target() as target, private_kafka(tmp / f"kafka-{name}") as kafka:
            topics = sorted(DISPATCH_TOPICS.values())
            await create_topics(kafka.bootstrap, topics, partitions=TOPIC_PARTITIONS)
            await create_topics(kafka.bootstrap, [DEAD_LETTER_TOPIC], partitions=1)
            # Every service (and the harness's consumer-group setup) reads the bootstrap from
            # the environment.
            os.environ["DUETIME_KAFKA_BOOTSTRAP"] = kafka.bootstrap
            async with running_system(
                dsn,
                workers=setup.workers,
                scheduler_extra={
                    "DUETIME_CLAIM_LOOKAHEAD": str(setup.lookahead),
                    **profiled(setup, f"{runs}-scheduler"),
                },
                relay_extra=profiled(setup, f"{runs}-relay"),
                # The production heartbeat interval (the harness beats every second for tests).
                worker_extra={
                    **(
                        {"DUETIME_WORKER_CONCURRENCY": str(setup.concurrency)}
                        if setup.concurrency is not None
                        else {}
                    ),
                    "DUETIME_HEARTBEAT_INTERVAL": "20",
                    **profiled(setup, f"{runs}-worker"),
                },
            ) as system:
                pool = await asyncpg.create_pool(dsn, min_size=1, max_size=2)
                try:
                    meter = CpuMeter(system, kafka.directory)
                    return await measure(
                        pool,
                        system.db_dsn,
                        target,
                        runs,
                        setup.lead,
                        setup.lookahead,
                        kafka.bootstrap,
                        meter,
                    )
                finally:
                    await pool.close()
    finally:
        await drop_database(name)


def profiled(setup: Setup, name: str) -> dict[str, str]:
    """The environment that makes a service write its cProfile statistics at exit."""
    if setup.profile is None:
        return {}
    hook = Path(__file__).resolve().parent / "profile_hook"
    path = os.pathsep.join(p for p in (str(hook), os.environ.get("PYTHONPATH", "")) if p)
    # Each worker writes its own file: the pid is added when the hook starts.
    return {"PYTHONPATH": path, "DUETIME_BENCH_PROFILE": str(setup.profile / f"{name}.prof")}


async def measure(
    pool: asyncpg.Pool[asyncpg.Record],
    dsn: str,
    target: HttpTarget,
    runs: int,
    lead: float,
    lookahead: float,
    bootstrap: str,
    meter: CpuMeter,
) -> Result:
    now: datetime = await pool.fetchval("SELECT duetime_now()")
    offset: timedelta = await pool.fetchval('SELECT "offset" FROM duetime_clock')
    assert offset == timedelta(0), "the bench compares the database clock with the host's"
    # Whole milliseconds, as a cron second would be.
    at = (now + timedelta(seconds=lead)).replace(microsecond=0) + timedelta(seconds=1)
    t0 = time.perf_counter()
    await seed(dsn, runs, at, target.url("/herd"))
    seeded = time.perf_counter() - t0
    print(f"  seeded {runs:,} jobs in {seeded:.1f} s; due in {(at - now).total_seconds():.1f} s")
    # CPU is counted from a second before the claim can begin (the look-ahead before the
    # instant) to the last outcome, so that it is the herd's rather than the idle system's.
    claim_begins = at - timedelta(seconds=lookahead + 1)
    await asyncio.sleep(max(0.0, (claim_begins - datetime.now(UTC)).total_seconds()))
    meter.start()

    async def mark_the_instant() -> None:
        await asyncio.sleep(max(0.0, (at - datetime.now(UTC)).total_seconds()))
        meter.at_instant()

    marking = asyncio.create_task(mark_the_instant())

    async def all_finished() -> bool:
        done = await pool.fetchval(
            "SELECT count(*) FROM runs WHERE state IN ('SUCCEEDED', 'DEAD_LETTERED')"
        )
        return int(done) == runs

    await eventually(all_finished, lead + 180, f"all {runs} runs finished", interval=0.5)
    await marking
    meter.report(runs)
    rows = await pool.fetch(
        "SELECT r.run_id, r.job_id, r.nominal_time, r.effective_time, r.create_time, r.state, "
        "a.number, a.start_time, a.end_time, a.worker_id "
        "FROM runs r JOIN attempts a USING (run_id, nominal_time) ORDER BY a.start_time"
    )
    states = {r["state"] for r in rows}
    assert states == {"SUCCEEDED"}, states
    first = {r["run_id"]: r for r in rows if r["number"] == 1}
    assert len(first) == runs, (len(first), runs)
    starts = [(r["start_time"] - r["effective_time"]).total_seconds() for r in first.values()]
    effective = {
        RunKey.scheduled(r["job_id"], r["nominal_time"]).canonical(): r for r in first.values()
    }
    calls = [c for c in target.calls if c.path == "/herd"]
    arrivals = [
        (c.time - effective[c.headers["Idempotency-Key"]]["effective_time"]).total_seconds()
        for c in calls
    ]
    called_keys = {c.headers["Idempotency-Key"] for c in calls}
    early = sum(x < 0 for x in starts) + sum(x < 0 for x in arrivals)
    late = sum(x > PROMISE.total_seconds() for x in starts)
    drain = (max(c.time for c in calls) - at).total_seconds()
    claimed = [(r["create_time"] - at).total_seconds() for r in first.values()]
    published = await publish_times(bootstrap, at)
    print(
        f"  attempts {len(rows):,} for {runs:,} runs; target calls {len(calls):,} "
        f"({len(called_keys):,} keys); EARLY {early}; over 5 s {late}"
    )
    batches = await pool.fetch(
        "SELECT worker_id, start_time, count(*) AS n FROM attempts "
        "GROUP BY worker_id, start_time ORDER BY start_time"
    )
    sizes = sorted(b["n"] for b in batches)
    print(
        f"  start transactions {len(batches):,} (runs started in one statement: "
        f"median {sizes[len(sizes) // 2]}, max {sizes[-1]})"
    )
    print(f"  runs started per second after the instant: {per_second(starts)}")
    print(f"  target calls per second after the instant: {per_second(arrivals)}")
    print(f"  start lateness (scheduler): {ms(starts)}")
    print(f"  start lateness (target):    {ms(arrivals)}")
    print(f"  drain (instant → last call): {drain:.2f} s")
    print(f"  hops, relative to the instant: claimed {ms(claimed)}")
    print(f"                                 published {ms(published)}")
    return Result(runs, quantiles(starts)[1], quantiles(arrivals)[1], drain, early)


def per_second(lateness: Sequence[float]) -> str:
    """How many of the runs came in each second after the instant: the pipeline's rate."""
    counts = Counter(int(x) for x in lateness)
    return " ".join(f"{counts.get(s, 0)}" for s in range(max(counts) + 1))


async def publish_times(bootstrap: str, at: datetime) -> list[float]:
    """When each dispatch reached Kafka (the record's timestamp), relative to the instant."""
    topics = sorted(DISPATCH_TOPICS.values())
    ends = await end_offsets(bootstrap, topics)
    records = await read_between(bootstrap, dict.fromkeys(ends, 0), ends)
    return [r.timestamp_ms / 1000 - at.timestamp() for r in records]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--lead", type=float, default=15.0)
    parser.add_argument(
        "--concurrency", type=int, help="execution slots a worker (default: the worker's own)"
    )
    parser.add_argument("--lookahead", type=float, default=5.0, help="the scheduler's, seconds")
    parser.add_argument(
        "--profile", type=Path, help="write each service's cProfile statistics in this folder"
    )
    args = parser.parse_args()
    setup = Setup(args.workers, args.lead, args.concurrency, args.lookahead, args.profile)
    template = await migrated_template()
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="duetime-herd-") as tmp:
            for runs in args.runs:
                print(f"herd of {runs:,} runs, {setup}", flush=True)
                results.append(await run_case(template, runs, setup, Path(tmp)))
    finally:
        await drop_database(template)
    for r in results:
        print(
            f"runs={r.runs:>6,}: p99 start {r.p99_start * 1000:.0f} ms (scheduler), "
            f"{r.p99_call * 1000:.0f} ms (target); drain {r.drain:.2f} s; early {r.early}"
        )


if __name__ == "__main__":
    asyncio.run(main())
