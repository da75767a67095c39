"""`python -m bench.chaos --minutes N --seed S`: the fault-injection soak.

A fleet of its own (``bench.chaos_fleet``: PostgreSQL, etcd, Kafka, api, relay, two schedulers,
two workers) runs a steady mix of interval, cron and one-off jobs against an idempotent
recording target (``bench.chaos_target``), plus a herd of one-offs due mid-soak, while
``bench.chaos_faults`` kills, freezes and restarts things at random. Then the faults stop, the
recurring jobs are paused, every run settles, and ``bench.chaos_check`` checks the invariants
and prints the figures. Exit status 1 when an invariant broke.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import re
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import grpc

from bench.chaos_check import Figures, verdict
from bench.chaos_faults import Injector
from bench.chaos_fleet import TEAM, Fleet, chaos_fleet
from bench.chaos_target import ChaosTarget, chaos_target
from bench.harness import cpu_model, load
from duetime.jobs.v1 import job_pb2, job_service_pb2
from testkit.fleet import eventually
from testkit.invariants import UNSETTLED
from testkit.system import http_job

log = logging.getLogger("bench.chaos")
RUN_ID = re.compile(r"run ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")
T = TypeVar("T")


@dataclass(frozen=True)
class Workload:
    interval_jobs: int = 40  # every 2 to 10 s
    cron_jobs: int = 10  # every 10 or 15 s (six-field cron)
    herd: int = 300  # one-offs due at the middle of the soak
    one_off_every: float = 2.0  # seconds between new one-offs, each due 3 to 30 s later


async def call_api(fn: Callable[[], Awaitable[T]], within: float = 120) -> T:
    """An API call retried as a careful client does (the api, or what it needs, may be down
    for a moment); every call here is idempotent (request ids, pause)."""
    deadline = time.monotonic() + within
    while True:
        try:
            return await fn()
        except grpc.aio.AioRpcError as e:
            retry = e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
            if not retry or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


async def create(fleet: Fleet, job: job_pb2.Job) -> uuid.UUID:
    request = job_service_pb2.CreateJobRequest(job=job, request_id=uuid.uuid4().hex)
    api = fleet.api
    response = await call_api(
        lambda: api.stub.CreateJob(request, metadata=api.metadata, timeout=10)
    )
    return uuid.UUID(response.job.name.rsplit("/", 1)[1])


def job(
    name: str,
    url: str,
    *,
    at: datetime | None = None,
    every: timedelta | None = None,
    after: timedelta | None = None,
    cron: tuple[str, str] | None = None,
) -> job_pb2.Job:
    """An HTTP job of the soak's: five attempts, 30 s each."""
    return http_job(
        name,
        url,
        at=at,
        every=every,
        after=after,
        cron=cron,
        max_attempts=5,
        attempt_timeout=timedelta(seconds=30),
    )


async def seed(
    fleet: Fleet, target: ChaosTarget, work: Workload, rng: random.Random, herd_in: float
) -> tuple[list[uuid.UUID], list[uuid.UUID]]:
    """The recurring jobs and the herd; returns their ids (recurring, herd)."""
    recurring = [
        job(f"interval-{i}", target.url("/interval"), every=timedelta(seconds=rng.randint(2, 10)))
        for i in range(work.interval_jobs)
    ]
    recurring += [
        job(f"cron-{i}", target.url("/cron"), cron=(f"*/{rng.choice((10, 15))} * * * * *", "UTC"))
        for i in range(work.cron_jobs)
    ]
    # One instant (the host's clock is the database's: the same machine, no offset).
    instant = datetime.now(UTC) + timedelta(seconds=herd_in)
    herd = [job(f"herd-{i}", target.url("/herd"), at=instant) for i in range(work.herd)]
    ids = await asyncio.gather(*(create(fleet, j) for j in recurring + herd))
    return ids[: len(recurring)], ids[len(recurring) :]


async def one_offs(
    fleet: Fleet, target: ChaosTarget, every: float, until: float, rng: random.Random
) -> int:
    """One-off jobs, one every ``every`` seconds until ``until``; returns how many."""
    made = 0
    while time.monotonic() < until:
        after = timedelta(seconds=rng.uniform(3, 30))
        await create(fleet, job(f"one-off-{made}", target.url("/one-off"), after=after))
        made += 1
        await asyncio.sleep(every)
    return made


async def quiesce(fleet: Fleet, recurring: list[uuid.UUID], within: float) -> float:
    """Pauses the recurring jobs and waits until every run settled; the seconds it took."""
    api = fleet.api

    async def pause(job_id: uuid.UUID) -> None:
        request = job_service_pb2.PauseJobRequest(name=f"teams/{TEAM}/jobs/{job_id}")
        await call_api(lambda: api.stub.PauseJob(request, metadata=api.metadata, timeout=10))

    await asyncio.gather(*map(pause, recurring))
    conn = await fleet.connect()
    try:

        async def settled() -> bool:
            left = await conn.fetchval(
                "SELECT count(*) FROM runs WHERE state = ANY($1::text[])", list(UNSETTLED)
            )
            pending = await conn.fetchval("SELECT count(*) FROM jobs WHERE state = 'ACTIVE'")
            return int(left) == 0 and int(pending) == 0

        return await eventually(settled, within, "every run settled", interval=1)
    finally:
        await conn.close()


async def soak(
    minutes: float, seed_value: int, work: Workload, fault_every: float, every_kind: bool = False
) -> Figures:
    """The soak; with ``every_kind``, faults go on past ``minutes`` until each kind ran."""
    rng = random.Random(seed_value)
    print(f"chaos soak: {minutes} min, seed {seed_value}, {cpu_model()}, {load()}", flush=True)
    async with chaos_target(random.Random(rng.random())) as target, chaos_fleet() as fleet:
        began = time.monotonic()
        until = began + minutes * 60
        recurring, herd = await seed(fleet, target, work, rng, herd_in=minutes * 30)
        print(f"seeded {len(recurring)} recurring jobs and a herd of {len(herd)}", flush=True)
        injector = Injector(fleet, random.Random(rng.random()))
        made, _ = await asyncio.gather(
            one_offs(fleet, target, work.one_off_every, until, random.Random(rng.random())),
            injector.run(until, fault_every, every_kind),
        )
        print(f"faults over after {time.monotonic() - began:.0f} s; {made} one-offs; {load()}")
        took = await quiesce(fleet, recurring, within=600)
        print(f"settled {took:.0f} s after the pause", flush=True)
        conn = await fleet.connect()
        try:
            figures = await verdict(conn, target, injector.done, set(herd))
        finally:
            await conn.close()
        figures.crashes = injector.crashes
        figures.violations += [
            f"{name}: a handler failed unexpectedly: {line[:300]}"
            for name, slot in fleet.services.items()
            for line in slot.handler_failures()
        ]
        explain(fleet, figures.violations)
    for line in figures.lines():
        print(line)
    print(load())
    return figures


def explain(fleet: Fleet, violations: list[str], runs: int = 5) -> None:
    """Writes every service's output to the fleet's folder, and prints the lines that name the
    runs of the first few violations."""
    logs = fleet.directory / "logs"
    logs.mkdir(exist_ok=True)
    for name, slot in fleet.services.items():
        text = "\n".join("\n".join(lines) for lines in slot.outputs)
        (logs / f"{name}.log").write_text(text + "\n")
    print(f"service logs: {logs}")
    named = [m for v in violations for m in RUN_ID.findall(v)]
    for run_id in list(dict.fromkeys(named))[:runs]:
        print(f"--- {run_id}")
        for name, slot in fleet.services.items():
            for lines in slot.outputs:
                for line in lines:
                    if run_id in line:
                        print(f"{name}: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--fault-every",
        type=float,
        default=7.0,
        help="seconds between faults (0: none, a baseline)",
    )
    parser.add_argument("--interval-jobs", type=int, default=Workload.interval_jobs)
    parser.add_argument("--herd", type=int, default=Workload.herd)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    work = Workload(interval_jobs=args.interval_jobs, herd=args.herd)
    figures = asyncio.run(soak(args.minutes, args.seed, work, args.fault_every))
    sys.exit(1 if figures.violations else 0)


if __name__ == "__main__":
    main()
