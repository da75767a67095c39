"""What the end-to-end benchmarks share: the four services as processes on a Kafka broker of
the bench's own, an HTTP target in a process of its own, jobs seeded straight into the
database, CPU time per process, and quantiles."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

from duetime_core import jobspec
from duetime_core.runkey import partition_of
from duetime_infra.codec.spec_json import spec_to_json
from duetime_infra.kafka.topics import DEAD_LETTER_TOPIC, DISPATCH_TOPICS
from duetime_infra.pg import team_store
from tests.support.kafka import PrivateKafka, create_topics, private_kafka
from tests.support.system import System, running_system

# Dispatch topic partitions on the bench's broker: enough for two workers to share evenly.
TOPIC_PARTITIONS = 6
REPO = Path(__file__).resolve().parents[1]


def quantiles(values: Sequence[float]) -> tuple[float, float, float]:
    """p50, p99 and max of ``values`` (nearest rank)."""
    ordered = sorted(values)

    def rank(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]

    return rank(0.5), rank(0.99), ordered[-1]


def ms(values: Sequence[float]) -> str:
    p50, p99, top = quantiles(values)
    return f"p50 {p50 * 1000:7.0f} ms  p99 {p99 * 1000:7.0f} ms  max {top * 1000:7.0f} ms"


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
    at: datetime
    url: str


async def seed_jobs(dsn: str, jobs: Sequence[SeedJob], *, seed: int = 11) -> None:
    """One-off HTTP jobs, each due at its ``at``, written as the API would store them (COPY),
    their teams made when missing."""
    conn = await asyncpg.connect(dsn)
    try:
        for team in sorted({j.team for j in jobs}):
            await team_store.ensure_team(conn, team)
        specs: dict[tuple[datetime, str], str] = {}
        rng = random.Random(seed)
        records = []
        for job in jobs:
            text = specs.get((job.at, job.url))
            if text is None:
                spec = jobspec.JobSpec(
                    display_name="bench",
                    schedule=jobspec.AtInstant(job.at),
                    target=jobspec.HttpTarget(jobspec.HttpMethod.POST, job.url),
                    attempt_timeout=timedelta(seconds=30),
                )
                text = specs[(job.at, job.url)] = json.dumps(spec_to_json(spec))
            job_id = uuid.UUID(int=rng.getrandbits(128), version=4)
            records.append((job_id, job.team, partition_of(job_id), "ACTIVE", text, job.at, job.at))
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


def system_processes(
    system: System, kafka_dir: Path, target: TargetProcess
) -> dict[str, list[int]]:
    """Each service, every PostgreSQL process on the machine (other users' queries count too),
    the bench's Kafka broker, the target, and the bench itself."""
    return {
        "api": [system.api_service.process.pid],
        "scheduler": [system.scheduler.process.pid],
        "relay": [system.relay.process.pid],
        **{f"worker {w}": [s.process.pid] for w, s in system.workers.items()},
        "postgresql (all)": pids_where(lambda comm, _: comm.startswith("postgres")),
        "kafka broker": pids_where(lambda _, cmd: str(kafka_dir) in cmd),
        "target": [target.process.pid],
        "bench": [os.getpid()],
    }


class CpuMeter:
    """CPU time per group of processes, split at one instant (``at_instant``)."""

    def __init__(self, groups: Mapping[str, list[int]]) -> None:
        self._groups = dict(groups)
        self.start()

    def start(self) -> None:
        self._start = self._read()
        self._started = time.perf_counter()
        self._instant, self._at = self._start, self._started

    def at_instant(self) -> None:
        self._instant = self._read()
        self._at = time.perf_counter()

    def _read(self) -> dict[str, float]:
        return {name: sum(map(cpu_seconds, pids)) for name, pids in self._groups.items()}

    def per_run(self, runs: int) -> dict[str, tuple[float, float]]:
        """µs of CPU per run, before the instant and after it, per group."""
        end = self._read()
        return {
            name: (
                (self._instant[name] - self._start[name]) / runs * 1e6,
                (used - self._instant[name]) / runs * 1e6,
            )
            for name, used in end.items()
        }

    def report(self, runs: int, exclude: Sequence[str] = ("target", "bench")) -> float:
        """Prints the table; returns the after-instant µs per run of the groups not excluded."""
        wall_after = time.perf_counter() - self._at
        print(f"  CPU µs per run, before the instant / after it ({wall_after:.1f} s wall after):")
        totals = [0.0, 0.0]
        for name, (before, after) in self.per_run(runs).items():
            print(f"    {name:<18} {before:6.0f} / {after:6.0f}")
            if name not in exclude:
                totals = [totals[0] + before, totals[1] + after]
        print(f"    {'total (system)':<18} {totals[0]:6.0f} / {totals[1]:6.0f}")
        return totals[1]
