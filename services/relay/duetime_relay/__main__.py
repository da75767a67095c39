"""`python -m duetime_relay`: the relay service, which drains the transactional outbox into Kafka
and re-enqueues runs whose dispatch message was lost.

Any number of relays may run side by side: each batch of outbox rows is published by the relay
that holds its row locks. The process serves only the gRPC health service (and reflection) on
``DUETIME_RELAY_HEALTH_ADDRESS``; it prints ``DUETIME_RELAY_PORT=<port>`` once serving. On
SIGTERM it stops taking batches, finishes the one in flight, and closes the producer and pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from grpc_health.v1 import health_pb2

from duetime_infra.grpc.server import GrpcServer, run_until_terminated
from duetime_infra.kafka.producer import BatchProducer
from duetime_infra.kafka.quiet import quiet_aiokafka
from duetime_infra.logs import configure_logging
from duetime_infra.pg.pool import create_pool
from duetime_infra.startup import require_schema, run_service
from duetime_infra.telemetry.metrics import sample_periodically, start_metrics
from duetime_infra.telemetry.tracing import setup_tracing
from duetime_infra.tls import Link, warn_plaintext
from duetime_relay.config import Settings
from duetime_relay.outbox_gauges import SAMPLE_INTERVAL, sample_outbox
from duetime_relay.reconciler import Reconciler
from duetime_relay.relay import Relay

log = logging.getLogger("duetime_relay")


async def serve(settings: Settings) -> None:
    warn_plaintext(settings.tls)
    metrics = start_metrics(settings.metrics_address, "relay")
    pg_tls = settings.tls.context(Link.POSTGRES)
    version = await require_schema(settings.pg_dsn, pg_tls)
    # One connection for the relay loop, one for the reconciler, one spare.
    pool = await create_pool(
        settings.pg_dsn,
        min_size=1,
        max_size=3,
        server_settings=settings.session_settings,
        tls=pg_tls,
    )
    producer = BatchProducer(
        settings.kafka_bootstrap,
        client_id=f"duetime-relay-{settings.relay_id}",
        delivery_timeout=settings.produce_timeout.total_seconds(),
        tls=settings.tls.client(Link.KAFKA),
    )
    relay = Relay(
        pool,
        producer,
        batch_size=settings.batch_size,
        poll_interval=settings.poll_interval.total_seconds(),
    )
    reconciler = Reconciler(
        pool,
        after=settings.reconcile_after,
        interval=settings.reconcile_interval.total_seconds(),
        batch_size=settings.reconcile_batch_size,
    )
    server = GrpcServer(settings.health_address, [])
    stopping = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []

    async def start() -> None:
        await server.start()
        tasks.append(asyncio.create_task(relay.run(stopping)))
        tasks.append(asyncio.create_task(reconciler.run(stopping)))
        if metrics is not None:
            sample = sample_periodically(SAMPLE_INTERVAL, lambda: sample_outbox(pool), stopping)
            tasks.append(asyncio.create_task(sample))
        log.info(
            "relay serving",
            extra={
                "action": "serving",
                "relay_id": settings.relay_id,
                "port": server.port,
                "schema_version": version,
            },
        )
        # The port line lets a launcher that asked for port 0 learn the real one.
        print(f"DUETIME_RELAY_PORT={server.port}", flush=True)

    async def stop() -> None:
        await server.health.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
        # Stop taking batches; the one in flight finishes (its produce is bounded by the
        # produce timeout). A batch cut short by the grace rolls back: its rows stay pending.
        stopping.set()
        if tasks:
            grace = settings.shutdown_grace_seconds + settings.produce_timeout.total_seconds()
            _, late = await asyncio.wait(tasks, timeout=grace)
            for task in late:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await producer.close()
        await pool.close()
        await server.stop(0)
        log.info(
            "relay stopped",
            extra={
                "action": "stopped",
                "published": relay.published,
                "reenqueued": reconciler.reenqueued,
            },
        )

    await run_until_terminated(start, stop)


def main() -> None:
    configure_logging()
    setup_tracing("duetime-relay")
    quiet_aiokafka()
    run_service("duetime_relay", lambda: serve(Settings.from_env()))


if __name__ == "__main__":
    main()
