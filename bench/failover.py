"""`python -m bench.failover [--repeat N] [--herd N]`: one scheduler killed under load.

The soak's fleet (``bench.chaos_fleet``: two schedulers, two workers given both addresses) runs
interval jobs against the soak's target, some calls taking seconds so attempts are in flight;
after a warm-up, kill -9 of the scheduler the workers talk to first (s1), left dead. Measured:
start lateness of the runs due in the 30 s after the kill (goal: within 5 s plus the partition
TTL) beside those due before it, the time until every partition s1 held is held by s2 again,
and the attempt leases that expired (every worker stays healthy: goal 0). The invariants of the
soak are checked too.

The herd case (``--herd 30000``): that many one-off runs due at one instant ``--herd-lead``
seconds after they are seeded, called at ``bench.target``; three fleets in turn: no fault,
s1 killed (kill -9) once a quarter of the herd is claimed, and s1 frozen (SIGSTOP) then,
thawed ``--freeze`` seconds later (past its partition lease). Measured by the target's clock:
the herd's lateness (p50 / p99 / max) and each fault's p99 against the fault-free one (goal:
at most 1.3x).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

from bench.chaos import create, job, quiesce
from bench.chaos_check import verdict
from bench.chaos_faults import Fault
from bench.chaos_fleet import PARTITION_TTL, TEAM, Fleet, chaos_fleet
from bench.chaos_target import ChaosTarget, chaos_target
from bench.harness import SeedJob, cpu_model, load, quantiles, seed_jobs, target_process
from duetime_core.runkey import RunKey
from duetime_infra.pg.teams.store import update_team_quota
from testkit.fleet import owners

WINDOW = timedelta(seconds=30)
GOAL = 5 + PARTITION_TTL


async def claimed_again(fleet: Fleet, dead: str, within: float = 120) -> float:
    """Seconds from now until no partition is held by ``dead`` and all that it held are held
    by another scheduler."""
    before = await owners(fleet.prefix, fleet.etcd.endpoint)
    held = {p for p, (owner, _) in before.items() if owner == dead}
    began = time.monotonic()
    while time.monotonic() - began < within:
        now = await owners(fleet.prefix, fleet.etcd.endpoint)
        if all(p in now and now[p][0] != dead for p in held):
            return time.monotonic() - began
        await asyncio.sleep(0.1)
    raise AssertionError(f"{dead}'s partitions not claimed again within {within} s")


def seconds(values: list[float]) -> str:
    p50, p99, top = quantiles(values or [0.0])
    return f"p50 {p50:.2f} s, p99 {p99:.2f} s, max {top:.2f} s"


def first_calls(target: ChaosTarget) -> dict[str, datetime]:
    first: dict[str, datetime] = {}
    for call in target.calls:
        first.setdefault(call.key, call.arrived)
    return first


async def once(jobs: int, every: int, warm_up: float, seed: int) -> bool:
    """One fail-over; prints its figures; True when every goal and invariant held."""
    async with chaos_target(random.Random(seed)) as target, chaos_fleet() as fleet:
        target.slow_share, target.fail_share = 0.2, 0.0
        interval = timedelta(seconds=every)
        url = target.url("/steady")
        ids = await asyncio.gather(
            *(create(fleet, job(f"steady-{i}", url, every=interval)) for i in range(jobs))
        )
        await asyncio.sleep(warm_up)
        s1 = fleet.services["s1"]
        killed = datetime.now(UTC)
        await s1.kill()
        reclaimed = await claimed_again(fleet, "s1")
        await asyncio.sleep(max(0.0, (killed + WINDOW - datetime.now(UTC)).total_seconds()) + 5)
        await quiesce(fleet, list(ids), within=180)
        conn = await fleet.connect()
        try:
            fault = Fault("kill", "s1", killed, datetime.now(UTC))
            figures = await verdict(conn, target, [fault], set())
            runs = await conn.fetch(
                "SELECT job_id, nominal_time FROM runs WHERE origin = 'SCHEDULE' "
                "AND state <> 'SKIPPED'"
            )
        finally:
            await conn.close()
    first = first_calls(target)
    before, after = [], []
    for run in runs:
        arrived = first.get(RunKey.scheduled(run["job_id"], run["nominal_time"]).canonical())
        if arrived is None:
            continue
        late = (arrived - run["nominal_time"]).total_seconds()
        if killed - WINDOW <= run["nominal_time"] < killed:
            before.append(late)
        elif killed <= run["nominal_time"] < killed + WINDOW:
            after.append(late)
    a = quantiles(after or [0.0])
    print(f"  runs due in the 30 s before the kill: {len(before)}; lateness {seconds(before)}")
    print(f"  runs due in the 30 s after the kill: {len(after)}; lateness {seconds(after)}")
    print(f"    (goal: every one within {GOAL:.0f} s)")
    print(
        f"  s1's partitions held by s2 {reclaimed:.1f} s after the kill (TTL {PARTITION_TTL:.0f} s)"
    )
    print(f"  leases expired: {figures.leases_expired} (every worker stayed healthy; goal 0)")
    print(f"  invariant violations: {len(figures.violations)}")
    for line in figures.violations[:10]:
        print(f"    {line}")
    print(f"  {load()}")
    return a[2] <= GOAL and figures.leases_expired == 0 and not figures.violations


HERD_FAULTS = ("none", "kill", "freeze")


async def herd_once(runs: int, fault: str, lead: float, freeze: float) -> list[float]:
    """One herd on a fleet of its own, with ``fault`` done to s1 once a quarter of the herd is
    claimed; each run's lateness at the target (its first call), seconds."""
    with tempfile.TemporaryDirectory(prefix="duetime-failover-herd-") as tmp:
        async with target_process(Path(tmp)) as target, chaos_fleet() as fleet:
            conn = await fleet.connect()
            try:
                # A team with a herd this size is let through: no rate or in-flight limit.
                await update_team_quota(conn, TEAM, {"runs_per_minute": 0, "max_running": 0})
                now: datetime = await conn.fetchval("SELECT duetime_now()")
                at = (now + timedelta(seconds=lead)).replace(microsecond=0)
                await seed_jobs(fleet.dsn, [SeedJob(TEAM, at, target.url("/herd"))] * runs)
                s1 = fleet.services["s1"]
                if fault != "none":
                    await eventually_count(conn, "SELECT count(*) FROM runs", runs // 4, lead)
                    done_at = datetime.now(UTC)
                    if fault == "kill":
                        await s1.kill()
                    else:
                        s1.freeze()
                    print(f"  {fault} s1 {(at - done_at).total_seconds():.1f} s before the instant")
                if fault == "freeze":
                    await asyncio.sleep(freeze)
                    s1.thaw()
                done = "SELECT count(*) FROM runs WHERE state IN ('SUCCEEDED', 'DEAD_LETTERED')"
                await eventually_count(conn, done, runs, lead + 180)
            finally:
                await conn.close()
            calls = [c for c in await target.stop() if c.path == "/herd"]
    first: dict[str, datetime] = {}
    for call in calls:
        key = call.idempotency_key
        first[key] = min(call.time, first.get(key, call.time))
    early = sum(1 for t in first.values() if t < at)
    if early or len(first) != runs:
        print(f"  PROBLEM: {early} calls early, {len(first)} keys called of {runs}")
    return [(t - at).total_seconds() for t in first.values()]


async def eventually_count(
    conn: asyncpg.Connection[asyncpg.Record], query: str, wanted: int, within: float
) -> None:
    began = time.monotonic()
    while int(await conn.fetchval(query)) < wanted:
        if time.monotonic() - began > within:
            raise AssertionError(f"not {wanted} within {within} s: {query}")
        await asyncio.sleep(0.05)


def herd(runs: int, repeat: int, lead: float, freeze: float) -> None:
    p99: dict[str, list[float]] = {f: [] for f in HERD_FAULTS}
    for n in range(repeat):
        for fault in HERD_FAULTS:
            print(f"herd of {runs:,}, round {n + 1}, fault {fault} ({load()})", flush=True)
            late = asyncio.run(herd_once(runs, fault, lead, freeze))
            print(f"  lateness {seconds(late)}; over 5 s {sum(x > 5 for x in late):,}")
            p99[fault].append(quantiles(late)[1])
    base = statistics.median(p99["none"])
    for fault in HERD_FAULTS[1:]:
        ratio = statistics.median(p99[fault]) / base
        print(f"  herd p99 with s1 {fault}: {ratio:.2f}x the fault-free p99 (goal <= 1.3x)")
    print(f"  {cpu_model()}, {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=60)
    parser.add_argument("--every", type=int, default=2, help="each job's interval, seconds")
    parser.add_argument("--warm-up", type=float, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--herd", type=int, default=0, help="the herd case: runs at one instant")
    parser.add_argument("--herd-lead", type=float, default=45, help="seconds from seed to instant")
    parser.add_argument("--freeze", type=float, default=15, help="seconds s1 stays frozen")
    args = parser.parse_args()
    if args.herd:
        herd(args.herd, args.repeat, args.herd_lead, args.freeze)
        return
    print(f"fail-over: {args.jobs} jobs every {args.every} s, {cpu_model()}, {load()}")
    ok = True
    for n in range(args.repeat):
        print(f"run {n + 1} of {args.repeat}:", flush=True)
        ok = asyncio.run(once(args.jobs, args.every, args.warm_up, args.seed + n)) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
