"""The floor of ``bench/herd``: ``--peer floor`` (aiohttp, as PgQueuer's jobs here call) and
``--peer floor-pyreqwest`` (as Duetime's worker calls) give each herd also to bare clients
(``bench.floor_client``), one process per worker, that do nothing but wait for the instant and
POST once a run to the same kind of target (``bench.target``, a process of its own). What they
measure is what the target and the calls alone cost on this machine: no scheduler, queue or
database can be faster with that client, so it bounds the ratios the other peers reach.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.floor_client import DONE, READY
from bench.harness import (
    REPO,
    CpuMeter,
    HerdOutcome,
    herd_outcome,
    processes_cpu,
    sleep_until,
    target_process,
)

# The peers this module runs, by the client their processes use.
FLOOR_PEERS = {"floor": "aiohttp", "floor-pyreqwest": "pyreqwest"}
PATH = "/floor"


def shares(runs: int, clients: int) -> list[tuple[int, int]]:
    """Each client's keys as (first, count): the runs split as evenly as they go."""
    base, extra = divmod(runs, clients)
    out, first = [], 0
    for n in range(clients):
        count = base + (n < extra)
        out.append((first, count))
        first += count
    return out


@asynccontextmanager
async def clients(
    url: str, keys: Sequence[tuple[int, int]], at: datetime, client: str
) -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """The floor's client processes, each ready (its client made) before this yields."""
    processes: list[asyncio.subprocess.Process] = []
    try:
        for first, count in keys:
            command = ["-m", "bench.floor_client", "--url", url, "--keys", str(first), str(count)]
            command += ["--at", f"{at.timestamp():.6f}", "--client", client]
            processes.append(
                await asyncio.create_subprocess_exec(
                    sys.executable, *command, cwd=REPO, stdout=asyncio.subprocess.PIPE
                )
            )
        async with asyncio.timeout(30):
            for process in processes:
                await expect(process, READY)
        yield processes
    finally:
        for process in processes:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


async def expect(process: asyncio.subprocess.Process, mark: str) -> str:
    """The rest of the first line ``process`` prints that starts with ``mark``."""
    assert process.stdout is not None
    while line := (await process.stdout.readline()).decode():
        if line.startswith(mark):
            return line[len(mark) :].strip()
    raise RuntimeError(f"a floor client exited (code {await process.wait()}) before {mark}")


async def floor_case(
    peer: str, runs: int, workers: int, lead: float, window: float, tmp: Path
) -> HerdOutcome:
    """The herd of ``runs`` on ``workers`` bare clients; CPU counted from ``window`` s before
    the instant to the last answer."""
    async with target_process(tmp) as target:
        at = (datetime.now(UTC) + timedelta(seconds=lead)).replace(microsecond=0)
        keys = shares(runs, workers)
        async with clients(target.url(PATH), keys, at, FLOOR_PEERS[peer]) as processes:
            meter = CpuMeter(
                {
                    "clients": processes_cpu([p.pid for p in processes]),
                    "target": processes_cpu([target.process.pid]),
                    "bench": processes_cpu([os.getpid()]),
                }
            )
            print(f"  {workers} client processes ({FLOOR_PEERS[peer]}); due in {lead:.0f} s")
            await sleep_until(at - timedelta(seconds=window))
            meter.start()
            await sleep_until(at)
            meter.at_instant()
            async with asyncio.timeout(180):
                failures = [int(await expect(p, DONE)) for p in processes]
            meter.stop()
        calls = await target.stop()
    cpu = meter.report(runs)
    due = {f"floor-{n}": at for n in range(runs)}
    outcome = herd_outcome(peer, due, [c for c in calls if c.path == PATH], at, cpu)
    if sum(failures):
        outcome.problems.append(f"calls not answered 200: {sum(failures)}")
    return outcome
