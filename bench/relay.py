"""bench/relay: outbox rows relayed to Kafka per second.

Each case writes N dispatch rows (as ``dispatch_row`` makes them, with a trace context) into the
outbox of a fresh database, then times relays draining them through the real relay transaction
(lock SKIP LOCKED, produce with the idempotent producer, wait for every ack, delete, commit) to a
topic of the bench's own on the local stack's broker. Every published dispatch is read back and
counted.

    uv run python -m bench.relay [--rows 20000] [--batch 500 1000 2000] [--relays 1 2]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import time
import uuid
from datetime import datetime

from duetime_core.jobspec import Priority
from duetime_core.runkey import RunKey
from duetime_infra.dispatch import dispatch_row
from duetime_infra.kafka.producer import BatchProducer
from duetime_infra.pg.dispatch.outbox_writer import insert_outbox
from duetime_infra.pg.pool import create_pool
from duetime_infra.tracecontext import new_run_trace
from duetime_relay.relay import Relay
from testkit.databases import create_database, drop_database, migrated_template
from testkit.kafka import (
    end_offsets,
    own_topics,
    read_between,
    shared_bootstrap,
    unique_topic,
)


async def run_case(template: str, rows: int, batch: int, relays: int) -> float:
    name = f"duetime_bench_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name, template=template)
    topic = unique_topic("bench")
    bootstrap = shared_bootstrap()
    pool = await create_pool(dsn, max_size=relays + 2)
    try:
        async with own_topics(bootstrap, [topic], partitions=6):
            now: datetime = await pool.fetchval("SELECT duetime_now()")
            outbox = [
                dataclasses.replace(
                    dispatch_row(
                        run_id=uuid.uuid4(),
                        key=RunKey.scheduled(uuid.uuid4(), now),
                        team_id="bench",
                        effective_time=now,
                        priority=Priority.NORMAL,
                        traceparent=new_run_trace(uuid.uuid4()).traceparent,
                        now=now,
                    ),
                    topic=topic,
                )
                for _ in range(rows)
            ]
            async with pool.acquire() as conn:
                for i in range(0, rows, 5000):
                    await insert_outbox(conn, outbox[i : i + 5000])
                await conn.execute("VACUUM ANALYZE outbox")
            producers = [BatchProducer(bootstrap, client_id=f"bench-{i}") for i in range(relays)]
            workers = [Relay(pool, p, batch_size=batch, poll_interval=0.05) for p in producers]
            # Connect first, so the timing is the steady state, not the bootstrap.
            for p in producers:
                await p.publish([])
            start = await end_offsets(bootstrap, [topic])

            async def drain(relay: Relay) -> None:
                while (await relay.relay_batch()).rows:
                    pass

            began = time.perf_counter()
            await asyncio.gather(*(drain(r) for r in workers))
            took = time.perf_counter() - began
            for p in producers:
                await p.close()
            left = await pool.fetchval("SELECT count(*) FROM outbox")
            records = await read_between(bootstrap, start, await end_offsets(bootstrap, [topic]))
            distinct = len({r.dispatch.dispatch_id for r in records})
            rate = rows / took
            print(
                f"rows={rows} batch={batch} relays={relays}: {took:.2f} s, {rate:,.0f} msg/s "
                f"(published {len(records)}, distinct {distinct}, left in outbox {left})"
            )
            return rate
    finally:
        await pool.close()
        await drop_database(name)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--batch", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--relays", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    template = await migrated_template()
    try:
        for relays in args.relays:
            for batch in args.batch:
                await run_case(template, args.rows, batch, relays)
    finally:
        await drop_database(template)


if __name__ == "__main__":
    asyncio.run(main())
