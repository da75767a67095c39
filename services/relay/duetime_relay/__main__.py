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
from dataclasses import dataclass, field

import asyncpg
from grpc_health.v1 import health_pb2

from duetime_infra.grpc.server import GrpcServer, run_until_terminated
from duetime_infra.kafka.aiokafka_logs import quiet_aiokafka
from duetime_infra.kafka.producer import BatchProducer
from duetime_infra.logs import configure_logging
from duetime_infra.pg.pool import connect, create_pool
from duetime_infra.startup import announce_serving, require_schema, run_service
from duetime_infra.telemetry.metrics import MetricsEndpoint, sample_periodically, start_metrics
from duetime_infra.telemetry.tracing import setup_tracing
from duetime_infra.tls import Link, warn_plaintext
from duetime_relay.config import Settings
from duetime_relay.outbox_gauges import SAMPLE_INTERVAL, sample_outbox
from duetime_relay.reconciler import Reconciler
from duetime_relay.relay import Pool, Relay

log = logging.getLogger("duetime_relay")


@dataclass
class RelayService:
    """The relay's parts, started and stopped in order by ``serve``."""

    settings: Settings
    pool: Pool
    producer: BatchProducer
    relay: Relay
    reconciler: Reconciler
    server: GrpcServer
    metrics: MetricsEndpoint | None
    schema_version: int
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def start(self) -> None:
        await self.server.start()
        listen = self.relay.wake.listen(self._listener_connection, self.stopping)
        self.tasks.append(asyncio.create_task(listen))
        self.tasks.append(asyncio.create_task(self.relay.run(self.stopping)))
        self.tasks.append(asyncio.create_task(self.reconciler.run(self.stopping)))
        if self.metrics is not None:
            sample = sample_periodically(
                SAMPLE_INTERVAL, lambda: sample_outbox(self.pool), self.stopping
            )
            self.tasks.append(asyncio.create_task(sample))
        announce_serving(
            log,
            "relay",
            "DUETIME_RELAY_PORT",
            self.server.port,
            relay_id=self.settings.relay_id,
            schema_version=self.schema_version,
        )

    async def _listener_connection(self) -> asyncpg.Connection[asyncpg.Record]:
        settings = self.settings
        named = {**settings.session_settings, "application_name": settings.listener_name}
        return await connect(settings.pg_dsn, settings.tls.context(Link.POSTGRES), named)

    async def stop(self) -> None:
        await self.server.health.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
        # Stop taking batches; the one in flight finishes (its produce is bounded by the
        # produce timeout). A batch cut short by the grace rolls back: its rows stay pending.
        self.stopping.set()
        await self._finish_tasks()
        await self.producer.close()
        await self.pool.close()
        await self.server.stop(0)
        log.info(
            "relay stopped",
            extra={
                "action": "stopped",
                "published": self.relay.published,
                "reenqueued": self.reconciler.reenqueued,
            },
        )

    async def _finish_tasks(self) -> None:
        if not self.tasks:
            return
        settings = self.settings
        grace = settings.shutdown_grace_seconds + settings.produce_timeout.total_seconds()
        _, late = await asyncio.wait(self.tasks, timeout=grace)
        for task in late:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def build_relay(settings: Settings) -> RelayService:
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
        idle_poll_interval=settings.idle_poll_interval.total_seconds(),
    )
    reconciler = Reconciler(
        pool,
        after=settings.reconcile_after,
        interval=settings.reconcile_interval.total_seconds(),
        batch_size=settings.reconcile_batch_size,
    )
    server = GrpcServer(settings.health_address, [])
    return RelayService(
        settings, pool, producer, relay, reconciler, server, metrics, schema_version=version
    )


async def serve(settings: Settings) -> None:
    warn_plaintext(settings.tls)
    service = await build_relay(settings)
    await run_until_terminated(service.start, service.stop)


def main() -> None:
    configure_logging()
    setup_tracing("duetime-relay")
    quiet_aiokafka()
    run_service("duetime_relay", lambda: serve(Settings.from_env()))


if __name__ == "__main__":
    main()
