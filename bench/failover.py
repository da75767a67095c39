"""`python -m bench.failover [--repeat N]`: one scheduler killed under steady load.

The soak's fleet (``bench.chaos_fleet``: two schedulers, two workers given both addresses) runs
interval jobs against the soak's target, some calls taking seconds so attempts are in flight;
after a warm-up, kill -9 of the scheduler the workers talk to first (s1), left dead. Measured:
start lateness of the runs due in the 30 s after the kill (goal: within 5 s plus the partition
TTL) beside those due before it, the time until every partition s1 held is held by s2 again,
and the attempt leases that expired (every worker stays healthy: goal 0). The invariants of the
soak are checked too.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from datetime import UTC, datetime, timedelta

from bench.chaos import create, job, quiesce
from bench.chaos_check import verdict
from bench.chaos_faults import Fault
from bench.chaos_fleet import PARTITION_TTL, Fleet, chaos_fleet
from bench.chaos_target import ChaosTarget, chaos_target
from bench.harness import cpu_model, load, quantiles
from duetime_core.runkey import RunKey
from tests.support.fleet import owners

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=60)
    parser.add_argument("--every", type=int, default=2, help="each job's interval, seconds")
    parser.add_argument("--warm-up", type=float, default=30)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"fail-over: {args.jobs} jobs every {args.every} s, {cpu_model()}, {load()}")
    ok = True
    for n in range(args.repeat):
        print(f"run {n + 1} of {args.repeat}:", flush=True)
        ok = asyncio.run(once(args.jobs, args.every, args.warm_up, args.seed + n)) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
