"""PgQueuer's side of ``bench/herd --peer pgqueuer`` and ``bench/steady --peer pgqueuer``, a
process of its own: ``python -m bench.pgqueuer_consumer --batch-size N`` does what ``pgq run
bench.pgqueuer_consumer:main --batch-size N`` would (``pgqueuer.run`` on uvloop), whose CLI
fails in 1.6.0 with the typer this lock file holds (its ``--log-level`` parser hands a str on).

One QueueManager on one asyncpg connection (PgQueuer's recommended driver for a consumer) with
one entrypoint, ``call``: each job POSTs once to the URL in its payload, with the job's id as
``Idempotency-Key``, through one shared aiohttp session holding at most
``BENCH_PGQ_CONNECTIONS`` connections (Duetime's worker keeps 256 to one host). Prints
``BENCH_PGQ_READY`` once connected. Reads ``BENCH_PGQ_DSN``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import asyncpg
import pgqueuer
import uvloop
from pgqueuer.db import AsyncpgDriver
from pgqueuer.models import Job
from pgqueuer.qm import QueueManager
from pgqueuer.queries import Queries

ENTRYPOINT = "call"
READY = "BENCH_PGQ_READY"


@asynccontextmanager
async def main() -> AsyncIterator[QueueManager]:
    connection = await asyncpg.connect(os.environ["BENCH_PGQ_DSN"])
    limit = int(os.environ.get("BENCH_PGQ_CONNECTIONS", "256"))
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=limit))
    manager = QueueManager(Queries(AsyncpgDriver(connection)))

    async def call(job: Job) -> None:
        assert job.payload is not None
        headers = {"Idempotency-Key": str(job.id)}
        async with session.post(job.payload.decode(), headers=headers) as response:
            await response.read()
            response.raise_for_status()

    manager.entrypoint(ENTRYPOINT)(call)
    print(READY, flush=True)
    try:
        yield manager
    finally:
        await session.close()
        await connection.close()


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch-size", type=int, default=10)
    args = parser.parse_args()
    uvloop.run(pgqueuer.run(main, batch_size=args.batch_size))


if __name__ == "__main__":
    run()
