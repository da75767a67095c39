"""What the end-to-end benchmarks share: the four services as processes on a Kafka broker of
the bench's own, an HTTP target in a process of its own, jobs seeded straight into the
database, CPU time per process, and quantiles."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import random
import signal
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit

import asyncpg

from duetime_core import jobspec
from duetime_core.runkey import partition_of
from duetime_infra.codec.spec_json import spec_to_json
from duetime_infra.kafka.topics import DEAD_LETTER_TOPIC, DISPATCH_TOPICS
from duetime_infra.pg.teams import store as team_store
from testkit.databases import drop_database, migrated_template, with_database
from testkit.kafka import (
    Offsets,
    PrivateKafka,
    create_topics,
    end_offsets,
    private_kafka,
    shared_bootstrap,
)
from testkit.system import System, running_system

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    # A connection of its own or one of a pool's.
    Connection = (
        asyncpg.Connection[asyncpg.Record] | asyncpg.pool.PoolConnectionProxy[asyncpg.Record]
    )

# Dispatch topic partitions on the bench's broker: enough for two workers to share evenly.
TOPIC_PARTITIONS = 6
REPO = Path(__file__).resolve().parents[1]

Options = TypeVar("Options", bound="DataclassInstance")


def bench_parser(
    description: str | None,
    *,
    pg_sample: bool = False,
    pgqueuer: bool = False,
    overlap: bool = False,
) -> argparse.ArgumentParser:
    """A bench's command line, with what every bench of the whole system asks: how many
    workers to start (``--workers``) and how many seconds after seeding its first runs are
    due (``--lead``); with ``pg_sample``, also ``--pg-sample`` (QuerySampler); with
    ``pgqueuer``, the PgQueuer peer's settings (``--pgq-batch``, ``--pgq-connections``); with
    ``overlap``, the seeded jobs' overlap policy (``--overlap``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--lead", type=float, default=15.0)
    if pg_sample:
        parser.add_argument(
            "--pg-sample",
            action="store_true",
            help="sample the statements running in the database, and their time after the instant",
        )
    if pgqueuer:
        parser.add_argument("--pgq-batch", type=int, default=100, help="PgQueuer's --batch-size")
        parser.add_argument(
            "--pgq-connections", type=int, default=256, help="the PgQueuer consumer's HTTP ones"
        )
    if overlap:
        parser.add_argument(
            "--overlap",
            type=jobspec.OverlapPolicy,
            choices=list(jobspec.OverlapPolicy),
            default=jobspec.OverlapPolicy.ALLOW,
            help="the jobs' overlap policy (only ALLOW starts attempts ahead)",
        )
    return parser


def options_from(kind: type[Options], args: argparse.Namespace) -> Options:
    """A bench's options (a dataclass) from its parsed command line, each field from the
    argument of the same name (``--per-team`` gives ``per_team``)."""
    return kind(**{f.name: getattr(args, f.name) for f in dataclasses.fields(kind)})


def quantiles(values: Sequence[float]) -> tuple[float, float, float]:
    """p50, p99 and max of ``values`` (nearest rank)."""
    ordered = sorted(values)

    def rank(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]

    return rank(0.5), rank(0.99), ordered[-1]


def ms(values: Sequence[float]) -> str:
    p50, p99, top = quantiles(values)
    return f"p50 {p50 * 1000:7.0f} ms  p99 {p99 * 1000:7.0f} ms  max {top * 1000:7.0f} ms"


def load() -> str:
    """The machine's load average (1, 5, 15 min), as uptime prints it."""
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def cpu_model() -> str:
    """The machine's CPU, from /proc/cpuinfo, and its core count."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    return f"unknown CPU, {os.cpu_count()} cores"


async def sleep_until(when: datetime) -> None:
    await asyncio.sleep(max(0.0, (when - datetime.now(UTC)).total_seconds()))


def per_second(lateness: Sequence[float]) -> str:
    """How many of the runs came in each second after the instant: the pipeline's rate."""
    counts = Counter(int(x) for x in lateness if x >= 0)
    return " ".join(f"{counts.get(s, 0)}" for s in range(max(counts, default=0) + 1))


# --- the target ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    time: datetime  # arrival, the host's wall clock
    path: str
    idempotency_key: str
    attempt: str


class TargetProcess:
    """``bench.target`` as a process; ``calls`` once it stopped."""

    def __init__(self, process: asyncio.subprocess.Process, port: int, out: Path) -> None:
        self.process = process
        self.port = port
        self._out = out
        self.calls: list[Call] = []

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        """On 127.0.0.1 or 127.0.0.2: two hosts of the worker's, with a connection pool each."""
        return f"http://{host}:{self.port}{path}"

    async def stop(self) -> list[Call]:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            await self.process.wait()
        self.calls = [
            Call(datetime.fromtimestamp(ns / 1e9, UTC), path, key, attempt)
            for ns, path, key, attempt in map(json.loads, self._out.read_text().splitlines())
        ]
        return self.calls


@asynccontextmanager
async def target_process(tmp: Path) -> AsyncIterator[TargetProcess]:
    out = tmp / f"target-{uuid.uuid4().hex[:8]}.jsonl"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.target",
        "--out",
        str(out),
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode().strip()
    if not line.startswith("BENCH_TARGET_PORT="):
        process.kill()
        raise RuntimeError(f"the target did not start: {line!r}")
    target = TargetProcess(process, int(line.split("=", 1)[1]), out)
    try:
        yield target
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


# --- seeding ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeedJob:
    team: str
    at: datetime  # the first run's time
    url: str
    every: timedelta | None = None  # an interval job's interval, anchored at ``at``; else one-off
    overlap: jobspec.OverlapPolicy = jobspec.OverlapPolicy.ALLOW


async def seed_jobs(dsn: str, jobs: Sequence[SeedJob], *, seed: int = 11) -> list[uuid.UUID]:
    """HTTP jobs, each first due at its ``at``, written as the API would store them (COPY),
    their teams made when missing; returns their ids, in order."""
    conn = await asyncpg.connect(dsn)
    try:
        for team in sorted({j.team for j in jobs}):
            await team_store.ensure_team(conn, team)
        specs: dict[SeedJob, str] = {}
        rng = random.Random(seed)
        records = []
        for job in jobs:
            text = specs.get(job)
            if text is None:
                schedule: jobspec.ScheduleSpec = (
                    jobspec.AtInstant(job.at)
                    if job.every is None
                    else jobspec.Every(job.every, job.at, job.at)
                )
                spec = jobspec.JobSpec(
                    display_name="bench",
                    schedule=schedule,
                    target=jobspec.HttpTarget(jobspec.HttpMethod.POST, job.url),
                    attempt_timeout=timedelta(seconds=30),
                    overlap=job.overlap,
                )
                text = specs[job] = json.dumps(spec_to_json(spec))
            job_id = uuid.UUID(int=rng.getrandbits(128), version=4)
            records.append((job_id, job.team, partition_of(job_id), "ACTIVE", text, job.at, job.at))
        # One transaction, as the API writes a job with its version: a scheduler already
        # running (its look-ahead grown to a minute) must not claim a job whose version row is
        # not there yet (its start would find no run: RUN_NOT_FOUND).
        async with conn.transaction():
            for i in range(0, len(records), 100_000):
                await conn.copy_records_to_table(
                    "jobs", records=records[i : i + 100_000], columns=JOB_COLUMNS
                )
            await conn.execute(
                "INSERT INTO job_versions (job_id, version, spec) "
                "SELECT job_id, version, spec FROM jobs "
                "ON CONFLICT (job_id, version) DO NOTHING"
            )
        await conn.execute("ANALYZE jobs")
        return [r[0] for r in records]
    finally:
        await conn.close()


# The columns a seeded job fills, in the order of its record.
JOB_COLUMNS = [
    "job_id",
    "team_id",
    "partition",
    "state",
    "spec",
    "next_run_time",
    "next_effective_time",
]


# --- the system ---------------------------------------------------------------------------------


@asynccontextmanager
async def bench_kafka(directory: Path) -> AsyncIterator[PrivateKafka]:
    """A broker of the bench's own with the dispatch and dead-letter topics; every service
    (and the harness's consumer-group setup) reads its address from the environment."""
    async with private_kafka(directory) as kafka:
        await create_topics(kafka.bootstrap, sorted(DISPATCH_TOPICS.values()), TOPIC_PARTITIONS)
        await create_topics(kafka.bootstrap, [DEAD_LETTER_TOPIC], partitions=1)
        os.environ["DUETIME_KAFKA_BOOTSTRAP"] = kafka.bootstrap
        yield kafka


@asynccontextmanager
async def bench_workspace(prefix: str) -> AsyncIterator[tuple[str, Path]]:
    """What a bench's cases share: a migrated template database (each case clones its own
    from it) and a temporary folder with the bench's broker in it; the template is dropped
    at the end."""
    template = await migrated_template()
    try:
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            async with bench_kafka(Path(tmp) / "kafka"):
                yield template, Path(tmp)
    finally:
        await drop_database(template)


def profiled(folder: Path | None, name: str) -> dict[str, str]:
    """The environment that makes a service write its cProfile statistics at exit to
    ``folder``/``name``.prof (``--profile``; nothing when None)."""
    if folder is None:
        return {}
    folder.mkdir(parents=True, exist_ok=True)
    hook = Path(__file__).resolve().parent / "profile_hook"
    path = os.pathsep.join(p for p in (str(hook), os.environ.get("PYTHONPATH", "")) if p)
    # Each worker writes its own file: the pid is added when the hook starts.
    return {"PYTHONPATH": path, "DUETIME_BENCH_PROFILE": str(folder / f"{name}.prof")}


@asynccontextmanager
async def bench_system(
    dsn: str,
    *,
    workers: int,
    scheduler_extra: Mapping[str, str] = {},
    relay_extra: Mapping[str, str] = {},
    worker_extra: Mapping[str, str] = {},
) -> AsyncIterator[System]:
    """The four services as processes, configured as deployed: the test harness's short
    partition lease (3 s) and heartbeat (1 s) give way to the production defaults."""
    async with running_system(
        dsn,
        workers=workers,
        scheduler_extra={
            "DUETIME_PARTITION_LEASE_TTL": "10",
            "DUETIME_PARTITION_SAFETY_MARGIN": "2",
            **scheduler_extra,
        },
        relay_extra=relay_extra,
        worker_extra={
            "DUETIME_HEARTBEAT_INTERVAL": "20",
            "DUETIME_TARGET_ALLOW": "127.0.0.0/8",
            **worker_extra,
        },
    ) as system:
        yield system


# --- CPU ----------------------------------------------------------------------------------------

_TICK = os.sysconf("SC_CLK_TCK")
# A source of CPU seconds used so far by some set of processes, read afresh at each call.
CpuSource = Callable[[], float]


def _stat(pid: int | str) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first), or None."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (0 once it is gone)."""
    fields = _stat(pid)
    return 0.0 if fields is None else (int(fields[11]) + int(fields[12])) / _TICK


def processes_cpu(pids: Sequence[int]) -> CpuSource:
    """The CPU of fixed processes (each counts 0 once it is gone: read before they stop)."""
    return lambda: sum(map(cpu_seconds, pids))


def pids_where(match: Callable[[str, str], bool]) -> list[int]:
    """Processes whose (command name, command line) match."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if match(comm, _cmdline(int(entry.name))):
            found.append(int(entry.name))
    return found


def children_of(parent: int) -> list[int]:
    """Live child processes of ``parent``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(entry.name)
            if fields is not None and int(fields[1]) == parent:
                found.append(int(entry.name))
    return found


class PostgresCpu:
    """CPU of one PostgreSQL server, however its backends come and go: the postmaster's own,
    its reaped children's (cutime + cstime: every backend that has exited) and its live
    children's, re-scanned at each reading. Counts every database's work on that server."""

    def __init__(self, postmaster: int) -> None:
        self.postmaster = postmaster

    def __call__(self) -> float:
        fields = _stat(self.postmaster)
        if fields is None:
            return 0.0
        own = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
        return own / _TICK + sum(map(cpu_seconds, children_of(self.postmaster)))

    def backends_of(self, database: str) -> CpuSource:
        """The live backends connected to ``database`` (their titles name it) at each reading:
        this bench's share, without other databases' work, the server's background processes
        or backends that exited between two readings."""

        def read() -> float:
            return sum(
                cpu_seconds(pid)
                for pid in children_of(self.postmaster)
                if f" {database} " in _cmdline(pid)
            )

        return read


async def postgres_cpu(dsn: str) -> PostgresCpu:
    """The CPU of the server ``dsn`` names (which must run on this machine): its postmaster is
    the parent of a backend of ours."""
    conn = await asyncpg.connect(dsn)
    try:
        fields = _stat(await conn.fetchval("SELECT pg_backend_pid()"))
    finally:
        await conn.close()
    if fields is None:
        raise RuntimeError("PostgreSQL runs elsewhere: its CPU cannot be read here")
    return PostgresCpu(int(fields[1]))


PG_SERVER = "postgresql (server)"
# Groups printed but not summed: a part of another group.
PG_OWN = "  of which this db"


async def system_processes(
    system: System, kafka_dir: Path, target: TargetProcess
) -> dict[str, CpuSource]:
    """Each service, the PostgreSQL server (every database on it; and the live backends of the
    system's own), the bench's Kafka broker, the target, and the bench itself."""
    postgres = await postgres_cpu(system.db_dsn)
    database = urlsplit(system.db_dsn).path.lstrip("/")
    return {
        "api": processes_cpu([system.api_service.process.pid]),
        "scheduler": processes_cpu([system.scheduler.process.pid]),
        "relay": processes_cpu([system.relay.process.pid]),
        **{f"worker {w}": processes_cpu([s.process.pid]) for w, s in system.workers.items()},
        PG_SERVER: postgres,
        PG_OWN: postgres.backends_of(database),
        "kafka broker": processes_cpu(pids_where(lambda _, cmd: str(kafka_dir) in cmd)),
        "target": processes_cpu([target.process.pid]),
        "bench": processes_cpu([os.getpid()]),
    }


# Not the system's own cost: the load it serves and the measuring.
NOT_THE_SYSTEM = ("target", "bench", PG_OWN)


class CpuMeter:
    """CPU time per group of processes from ``start()`` to ``stop()``, split at one instant
    (``at_instant()``). Stop before any measured process ends (the target, the services)."""

    def __init__(self, groups: Mapping[str, CpuSource]) -> None:
        self._groups = dict(groups)
        self.start()

    def start(self) -> None:
        self._start = self._read()
        self._started = time.perf_counter()
        self._instant, self._at = self._start, self._started
        self._end: dict[str, float] | None = None

    def at_instant(self) -> None:
        self._instant = self._read()
        self._at = time.perf_counter()

    def stop(self) -> None:
        self._end = self._read()
        self._ended = time.perf_counter()

    def _read(self) -> dict[str, float]:
        return {name: source() for name, source in self._groups.items()}

    def per_run(self, runs: int) -> dict[str, tuple[float, float]]:
        """µs of CPU per run, before the instant and after it, per group."""
        if self._end is None:
            self.stop()
        assert self._end is not None
        return {
            name: (
                (self._instant[name] - self._start[name]) / runs * 1e6,
                (used - self._instant[name]) / runs * 1e6,
            )
            for name, used in self._end.items()
        }

    def report(
        self, runs: int, exclude: Sequence[str] = NOT_THE_SYSTEM, *, split: bool = True
    ) -> CpuFigures:
        """Prints the table (without ``split``, one column: the whole time from ``start()``);
        returns the figures (totals without the groups excluded)."""
        per_run = self.per_run(runs)
        before, after = self._at - self._started, self._ended - self._at
        room = (os.cpu_count() or 1) * after / runs * 1e6
        if split:
            print(
                f"  CPU µs per run, before the instant ({before:.1f} s wall) / after it "
                f"({after:.1f} s wall: all cores give {room:.0f} µs a run):"
            )
        else:
            print(f"  CPU µs per run ({after:.1f} s wall: all cores give {room:.0f} µs a run):")
        totals = [0.0, 0.0]
        for name, (b, a) in per_run.items():
            print(f"    {name:<20} {b:6.0f} / {a:6.0f}" if split else f"    {name:<20} {a:6.0f}")
            if name not in exclude:
                totals = [totals[0] + b, totals[1] + a]
        total = f"{totals[0]:6.0f} / {totals[1]:6.0f}" if split else f"{totals[1]:6.0f}"
        print(f"    {'total (system)':<20} {total}")
        return CpuFigures(per_run, totals[0], totals[1])


@dataclass(frozen=True)
class CpuFigures:
    """µs of CPU a run by group (before, after the instant), and the system's totals."""

    groups: dict[str, tuple[float, float]]
    before: float
    after: float

    @property
    def after_own(self) -> float:
        """``after`` with the bench's own database's backends in place of the whole server:
        steadier on a shared server, but without its background processes."""
        server = self.groups.get(PG_SERVER, (0.0, 0.0))[1]
        return self.after - server + self.groups.get(PG_OWN, (0.0, 0.0))[1]


# --- a herd's outcome ---------------------------------------------------------------------------

PROMISE = 5.0


@dataclass(frozen=True)
class HerdOutcome:
    """One peer's herd, by the target's clock: each run's first call minus its due time."""

    peer: str
    runs: int
    late: list[float]
    at: datetime
    last_call: datetime
    problems: list[str]
    cpu: CpuFigures
    load: str

    @property
    def drain(self) -> float:
        """The instant to the last call."""
        return (self.last_call - self.at).total_seconds()

    @property
    def over_promise(self) -> int:
        return sum(x > PROMISE for x in self.late)


def herd_outcome(
    peer: str,
    due: Mapping[str, datetime],
    calls: Sequence[Call],
    at: datetime,
    cpu: CpuFigures,
) -> HerdOutcome:
    """Matches the target's calls with the runs due (by idempotency key) and prints the
    lateness: every run called once, none before its time."""
    first: dict[str, Call] = {}
    repeated = 0
    for call in sorted(calls, key=lambda c: c.time):
        if call.idempotency_key in first:
            repeated += 1
        else:
            first[call.idempotency_key] = call
    late = [(c.time - due[key]).total_seconds() for key, c in first.items() if key in due]
    problems = [
        f"{what}: {n}"
        for what, n in (
            ("runs never called", len(set(due) - set(first))),
            ("calls of no run", len(set(first) - set(due))),
            ("repeated calls", repeated),
            ("EARLY calls", sum(x < 0 for x in late)),
        )
        if n
    ]
    outcome = HerdOutcome(
        peer, len(due), late, at, max((c.time for c in calls), default=at), problems, cpu, load()
    )
    print(
        f"  {peer}: {problems or 'ok'}; over {PROMISE:.0f} s "
        f"{outcome.over_promise:,} of {len(due):,}; {outcome.load}"
    )
    print(f"  runs by whole seconds late (target clock): {per_second(late)}")
    print(f"  start lateness (target):    {ms(late)}")
    print(f"  drain (instant → last call): {outcome.drain:.2f} s", end="")
    print(f"; the first call {1000 * min(late):.0f} ms after it" if late else "")
    return outcome


# --- what the database wrote ----------------------------------------------------------------

# Kafka's own topic of consumer-group offset commits.
OFFSETS_TOPIC = "__consumer_offsets"


@dataclass(frozen=True)
class Counts:
    transactions: int
    # Per table (partitions under their parent): inserted, updated, deleted.
    tables: dict[str, tuple[int, int, int]]
    kafka: Offsets


async def database_counts(conn: Connection) -> Counts:
    """What the bench's database has done so far (``postgres_counts``), and the Kafka records
    written so far."""
    topics = [*sorted(DISPATCH_TOPICS.values()), OFFSETS_TOPIC]
    counts = await postgres_counts(conn)
    return dataclasses.replace(counts, kafka=await end_offsets(shared_bootstrap(), topics))


async def postgres_counts(conn: Connection) -> Counts:
    """What the database ``conn`` is in has done so far, and no Kafka records: PostgreSQL's
    statistics, which a backend reports at most once a second (a window of tens of seconds is
    short by about one)."""
    await conn.execute("SELECT pg_stat_clear_snapshot()")
    transactions = await conn.fetchval(
        "SELECT xact_commit + xact_rollback FROM pg_stat_database "
        "WHERE datname = current_database()"
    )
    rows = await conn.fetch(
        "SELECT coalesce(parent.relname, t.relname) AS name, sum(t.n_tup_ins) AS ins, "
        "sum(t.n_tup_upd) AS upd, sum(t.n_tup_del) AS del FROM pg_stat_user_tables t "
        "LEFT JOIN pg_inherits i ON i.inhrelid = t.relid "
        "LEFT JOIN pg_class parent ON parent.oid = i.inhparent GROUP BY 1"
    )
    return Counts(
        int(transactions),
        {r["name"]: (int(r["ins"]), int(r["upd"]), int(r["del"])) for r in rows},
        {},
    )


def writes_per_run(
    before: Counts, after: Counts, runs: int
) -> dict[str, tuple[float, float, float]]:
    """Rows inserted, updated and deleted a run between two counts, by table (those written)."""
    writes = {}
    for table, (ins, upd, dele) in after.tables.items():
        was = before.tables.get(table, (0, 0, 0))
        n = max(1, runs)
        writes[table] = ((ins - was[0]) / n, (upd - was[1]) / n, (dele - was[2]) / n)
    return {t: w for t, w in writes.items() if any(w)}


def shown(writes: dict[str, tuple[float, float, float]]) -> str:
    return ", ".join(f"{t} +{i:.2f}/~{u:.2f}/-{d:.2f}" for t, (i, u, d) in writes.items())


# --- where PostgreSQL's time goes ---------------------------------------------------------------


# What each active backend of the database runs and waits for; for a lock wait, the relation
# and the statement of the first backend it waits behind.
_SAMPLED = r"""
SELECT coalesce(a.wait_event_type || ':' || a.wait_event, 'running') AS w,
       left(regexp_replace(a.query, '\s+', ' ', 'g'), 100) AS q,
       CASE WHEN a.wait_event_type = 'Lock' THEN
           (SELECT coalesce(l.relation::regclass::text || ' ', '')
            FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted LIMIT 1)
           || (SELECT coalesce(b.wait_event_type || ':' || b.wait_event, 'running') || ' '
                      || left(regexp_replace(b.query, '\s+', ' ', 'g'), 80)
               FROM pg_stat_activity b WHERE b.pid = (pg_blocking_pids(a.pid))[1])
       END AS b
FROM pg_stat_activity a
WHERE a.datname = current_database() AND a.state = 'active' AND a.pid <> pg_backend_pid()
"""


class QuerySampler:
    """Samples the statements running in one database (pg_stat_activity, every ``interval``
    seconds): with no pg_stat_statements on the shared server, the share of samples a
    statement is seen running in is where that database's time goes."""

    def __init__(self, dsn: str, interval: float = 0.05) -> None:
        self._dsn = dsn
        self._interval = interval
        self.seen: Counter[str] = Counter()
        self.samples = 0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> QuerySampler:
        self._conn = await asyncpg.connect(self._dsn)
        self._task = asyncio.create_task(self._sample())
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        await self._conn.close()

    async def _sample(self) -> None:
        while True:
            rows = await self._conn.fetch(_SAMPLED)
            self.samples += 1
            self.seen.update(
                f"{r['w']:<22} {r['q']}" + (f"\n{'':32}behind: {r['b']}" if r["b"] else "")
                for r in rows
            )
            await asyncio.sleep(self._interval)

    def report(self, top: int = 8) -> None:
        print(
            f"  statements running in the bench's database ({self.samples} samples; backends "
            "on average, by what they wait for: 'running' is on a CPU or waiting for one):"
        )
        for query, n in self.seen.most_common(top):
            print(f"    {n / max(1, self.samples):6.2f}  {query}")


# Cumulative time of each statement of one database (pg_stat_statements, read from database
# duetime where scripts/stack installs it); triggers' and functions' statements are their own
# entries (track = all), so their time shows twice: in the caller's and in their own.
_STATEMENTS = """
SELECT s.queryid, left(regexp_replace(s.query, '\\s+', ' ', 'g'), 90) AS q,
       s.calls, s.rows, s.total_exec_time, s.toplevel
FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
WHERE d.datname = $1
"""


@dataclass(frozen=True)
class StatementCost:
    """Top-level statements a run, and the µs a run spent executing them."""

    statements: float
    micros: float

    def __str__(self) -> str:
        return f"{self.statements:.2f} a run, {self.micros:,.0f} µs a run executing"


class StatementStats:
    """Per-statement execution time in one database between ``start`` and ``stop``, from
    pg_stat_statements; ``available`` is False where the server has not loaded it."""

    def __init__(self, dsn: str) -> None:
        self._database = urlsplit(dsn).path.lstrip("/")
        self._dsn = with_database(dsn, "duetime")
        self._before: dict[tuple[int, bool], asyncpg.Record] = {}
        self.available = True

    async def _read(self) -> dict[tuple[int, bool], asyncpg.Record]:
        try:
            conn = await asyncpg.connect(self._dsn)
        except (OSError, asyncpg.PostgresError):
            self.available = False
            return {}
        try:
            rows = await conn.fetch(_STATEMENTS, self._database)
        except asyncpg.PostgresError:
            self.available = False
            return {}
        finally:
            await conn.close()
        return {(r["queryid"], r["toplevel"]): r for r in rows}

    async def start(self) -> None:
        self._before = await self._read()

    async def report(self, runs: int, top: int = 12) -> StatementCost | None:
        """Prints the ``top`` statements by time since ``start``; returns the top-level
        statements' cost a run (None where pg_stat_statements is not loaded)."""
        after = await self._read()
        if not self.available:
            print("  (pg_stat_statements not loaded: `scripts/stack down && scripts/stack up`)")
            return None
        spent: list[tuple[float, int, int, str, bool]] = []
        for key, row in after.items():
            was = self._before.get(key)
            ms = row["total_exec_time"] - (was["total_exec_time"] if was else 0.0)
            calls = row["calls"] - (was["calls"] if was else 0)
            rows = row["rows"] - (was["rows"] if was else 0)
            if calls:
                spent.append((ms, calls, rows, row["q"], row["toplevel"]))
        spent.sort(reverse=True)
        total = sum(entry[0] for entry in spent if entry[4])
        statements = sum(entry[1] for entry in spent if entry[4])
        cost = StatementCost(statements / runs, total * 1000 / runs)
        print(
            f"  statements in the bench's database: {cost}, top level (pg_stat_statements; "
            "nested ones marked *):"
        )
        for ms, calls, rows, query, toplevel in spent[:top]:
            mark = " " if toplevel else "*"
            print(
                f"   {mark}{ms * 1000 / runs:7,.0f} µs/run {calls / runs:6.2f} calls/run "
                f"{rows / max(1, calls):7.1f} rows/call  {query}"
            )
        return cost
