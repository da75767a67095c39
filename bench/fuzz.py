"""bench/fuzz: type-aware random requests to every RPC of JobService, AdminService and
WorkerService, built from the proto descriptors (testkit/fuzz.py), against the real
servers in process on a fresh database of the local stack. Every answer is counted by status
code; an INTERNAL or UNKNOWN answer, or a refused call that changed the database, is a failure
(listed, and the exit status is 1). Each request's RPC is drawn among all of them.

    uv run python -m bench.fuzz [--requests 10000] [--seed N]
"""

from __future__ import annotations

import argparse
import sys
import time

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from testkit.fuzz import FuzzTarget, every_rpc, requests
from testkit.secrets import ensure_test_keyring

TOKENS = st.sampled_from(["1", "2", "0", "-1", "2147483648", "x", ""])


def run(count: int, random_seed: int) -> int:
    rpcs = every_rpc()
    with FuzzTarget() as target:

        @seed(random_seed)
        @settings(
            max_examples=count,
            deadline=None,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(data=st.data())
        def one(data: st.DataObject) -> None:
            rpc = data.draw(st.sampled_from(rpcs))
            request = data.draw(requests(rpc.method.input_type, target.words))
            how = data.draw(st.integers(0, 9))
            target.call(rpc, request, how, data.draw(TOKENS), strict=False)

        began = time.monotonic()
        one()
        elapsed = time.monotonic() - began
        tally = target.tally
        total = sum(tally.counts.values())
        print(f"{total} requests to {len(rpcs)} RPCs in {elapsed:.1f} s")
        print("by status code: " + ", ".join(f"{c} {n}" for c, n in tally.by_code().most_common()))
        for rpc in rpcs:
            codes = {c: n for (name, c), n in tally.counts.items() if name == rpc.name}
            shown = ", ".join(f"{c} {n}" for c, n in sorted(codes.items(), key=lambda x: -x[1]))
            print(f"  {rpc.name}: {shown}")
        for problem in tally.broken:
            print(f"FAILED: {problem[:600]}")
        return 1 if tally.broken else 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz")
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    ensure_test_keyring()
    sys.exit(run(args.requests, args.seed))


if __name__ == "__main__":
    main()
