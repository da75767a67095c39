"""The PgQueuer peer of ``bench/herd`` and ``bench/steady``: the same runs given to PgQueuer,
on the same PostgreSQL server (a database of its own) and the same kind of target
(``bench.target``, a process of its own).

Jobs are enqueued with PgQueuer's own API (``Queries.enqueue`` with ``execute_after``), each to
POST once to the target; one consumer process (``bench.pgqueuer_consumer`` as ``pgq run`` would
run it) takes them when due. Needs the lock file's ``bench`` group (``uv run --group bench``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
from pgqueuer.db import AsyncpgDriver
from pgqueuer.queries import Queries

from bench.harness import (
    PG_OWN,
    PG_SERVER,
    REPO,
    CpuMeter,
    CpuSource,
    HerdOutcome,
    TargetProcess,
    herd_outcome,
    postgres_cpu,
    processes_cpu,
    sleep_until,
    target_process,
)
from bench.pgqueuer_consumer import ENTRYPOINT, READY
from testkit.databases import create_database, drop_database
from testkit.fleet import eventually


@dataclass(frozen=True)
class PgqSettings:
    # Jobs a dequeue takes (``pgq run --batch-size``; PgQueuer's default is 10).
    batch_size: int
    # The consumer's HTTP connections at once.
    connections: int

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> PgqSettings:
        """From the options ``bench_parser(pgqueuer=True)`` adds."""
        return cls(args.pgq_batch, args.pgq_connections)


@dataclass(frozen=True)
class PgqPeer:
    """PgQueuer running: its database (``conn``, the bench's connection to it), the target,
    and the CPU sources of the consumer, PostgreSQL, the target and the bench."""

    dsn: str
    conn: asyncpg.Connection
    target: TargetProcess
    processes: dict[str, CpuSource]


@asynccontextmanager
async def running_pgqueuer(settings: PgqSettings, tmp: Path) -> AsyncIterator[PgqPeer]:
    """A database of its own with PgQueuer's schema (``pgq install``, then ``pgq autovac``
    from PgQueuer's checklist), the target and the consumer; the database dropped after."""
    name = f"duetime_bench_pgq_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name)
    try:
        conn = await asyncpg.connect(dsn)
        try:
            queries = Queries(AsyncpgDriver(conn))
            await queries.install()
            await queries.optimize_autovacuum()
            async with (
                target_process(tmp) as target,
                consumer_process(dsn, settings, tmp) as consumer,
            ):
                postgres = await postgres_cpu(dsn)
                processes: dict[str, CpuSource] = {
                    "pgqueuer": processes_cpu([consumer.pid]),
                    PG_SERVER: postgres,
                    PG_OWN: postgres.backends_of(name),
                    "target": processes_cpu([target.process.pid]),
                    "bench": processes_cpu([os.getpid()]),
                }
                yield PgqPeer(dsn, conn, target, processes)
        finally:
            await conn.close()
    finally:
        await drop_database(name)


@asynccontextmanager
async def consumer_process(
    dsn: str, settings: PgqSettings, tmp: Path
) -> AsyncIterator[asyncio.subprocess.Process]:
    """The consumer as ``pgq run`` would run it; its output goes to a file (a pipe nobody
    reads could stall it)."""
    env = {
        **os.environ,
        "BENCH_PGQ_DSN": dsn,
        "BENCH_PGQ_CONNECTIONS": str(settings.connections),
    }
    log = tmp / f"pgqueuer-{uuid.uuid4().hex[:8]}.log"
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.pgqueuer_consumer",
            "--batch-size",
            str(settings.batch_size),
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
        )
    try:

        async def ready() -> bool:
            if process.returncode is not None:
                raise RuntimeError(f"the PgQueuer consumer exited: {log.read_text()[-2000:]}")
            return READY in log.read_text()

        await eventually(ready, 30, "the PgQueuer consumer started")
        yield process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


async def enqueue(
    conn: asyncpg.Connection, url: str, due: Sequence[datetime], chunk: int = 10_000
) -> dict[str, datetime]:
    """A job for each due time, each to POST once to ``url``, ``chunk`` jobs a statement;
    returns every job queued, by id, with its due time as stored."""
    queries = Queries(AsyncpgDriver(conn))
    payload = url.encode()
    for i in range(0, len(due), chunk):
        part = due[i : i + chunk]
        # execute_after is an interval from the statement's NOW(): each job lands a few
        # milliseconds after its time (the same for all of one statement), and is read back.
        now = datetime.now(UTC)
        n = len(part)
        await queries.enqueue([ENTRYPOINT] * n, [payload] * n, [0] * n, [at - now for at in part])
    rows = await conn.fetch("SELECT id, execute_after FROM pgqueuer")
    return {str(r["id"]): r["execute_after"] for r in rows}


async def pgqueuer_case(
    runs: int, lead: float, window: float, settings: PgqSettings, tmp: Path
) -> HerdOutcome:
    """The herd of ``runs`` on PgQueuer, all due at one whole second ``lead`` seconds on (one
    statement, so every job gets the same instant); CPU counted from ``window`` s before it."""
    async with running_pgqueuer(settings, tmp) as peer:
        conn = peer.conn
        meter = CpuMeter(peer.processes)
        now: datetime = await conn.fetchval("SELECT now()")
        at = (now + timedelta(seconds=lead)).replace(microsecond=0) + timedelta(seconds=1)
        due = await enqueue(conn, peer.target.url("/herd"), [at] * runs, chunk=runs)
        at = min(due.values())
        print(f"  enqueued {runs:,} jobs; due in {lead:.0f} s", flush=True)
        await sleep_until(at - timedelta(seconds=window))
        meter.start()
        await sleep_until(at)
        meter.at_instant()

        async def all_done() -> bool:
            return int(await conn.fetchval("SELECT count(*) FROM pgqueuer")) == 0

        await eventually(all_done, 180, f"all {runs:,} jobs done", interval=0.5)
        meter.stop()
        calls = await peer.target.stop()
        cpu = meter.report(runs)
        return herd_outcome("pgqueuer", due, calls, at, cpu)
