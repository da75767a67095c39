"""One scheduler's partition leases alone in a process, for tests that kill or freeze it.

    python testkit/partition_member.py ENDPOINT SCHEDULER_ID PREFIX --ttl 3 --margin 1

Prints one JSON object per line on stdout: ``{"event": "started", ...}`` once the first
session is open, then on every ownership change ``{"event": "changed", "t": <monotonic>,
"count": n, "min_revision": r, "max_revision": r, "reason": ...}``, where ``count`` and the
revisions come from ``owned()`` at that moment. ``time.monotonic`` is CLOCK_MONOTONIC, shared
by every process on the machine, so a test can order these lines against its own clock.
Stops cleanly on SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
import time

from duetime_infra.etcd import OwnershipChange, PartitionLeases


def emit(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("endpoint")
    parser.add_argument("scheduler_id")
    parser.add_argument("prefix")
    parser.add_argument("--ttl", type=float, default=3.0)
    parser.add_argument("--margin", type=float, default=1.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    leases = PartitionLeases(
        args.endpoint,
        args.scheduler_id,
        ttl=args.ttl,
        safety_margin=args.margin,
        prefix=args.prefix,
    )

    def report(change: OwnershipChange) -> None:
        owned = leases.owned()
        revisions = [token.revision for token in owned.values()]
        emit(
            event="changed",
            t=time.monotonic(),
            count=len(owned),
            min_revision=min(revisions, default=0),
            max_revision=max(revisions, default=0),
            reason=change.reason,
        )

    leases.subscribe(report)
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    await leases.start()
    emit(event="started", t=time.monotonic())
    await stopping.wait()
    await leases.stop()
    emit(event="stopped", t=time.monotonic())


if __name__ == "__main__":
    asyncio.run(main())
