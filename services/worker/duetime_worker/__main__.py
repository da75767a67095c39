"""`python -m duetime_worker`: the worker service, which consumes dispatched runs and executes
their targets under heartbeated leases.

It has no database access: everything goes through the schedulers' WorkerService, over TLS,
authenticated with ``DUETIME_WORKER_TOKEN`` or its client certificate. The process serves only
the gRPC health service (and reflection, in plaintext: nothing secret) on
``DUETIME_WORKER_HEALTH_ADDRESS`` and prints ``DUETIME_WORKER_PORT=<port>`` once serving; its
consumers connect to Kafka in the background, trying again while the brokers are unreachable.
On SIGTERM it stops taking messages and starting attempts at once (messages not started yet
are left uncommitted, for another worker; an attempt whose start was already sent is handed
back unrun if it started), lets running attempts finish within the grace period, hands the rest
back (HANDED_BACK: queued again at once, without spending their retry budget unless the run was
handed back three times before), commits offsets and closes.

It also delivers dead-letter notifications to the teams' webhooks (``notify_consumer``), from
``duetime.deadletter`` in a consumer group of their own (``DUETIME_NOTIFY_GROUP``).
"""

from __future__ import annotations

import asyncio
import logging
import resource

from grpc_health.v1 import health_pb2

from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_infra.grpc.channels import scheduler_channel
from duetime_infra.grpc.server import GrpcServer, run_until_terminated
from duetime_infra.kafka.quiet import quiet_aiokafka
from duetime_infra.logs import configure_logging
from duetime_infra.startup import run_service
from duetime_infra.telemetry.metrics import sample_periodically, start_metrics
from duetime_infra.telemetry.tracing import setup_tracing
from duetime_infra.tls import Link, warn_plaintext
from duetime_worker.attempts import RPC_TIMEOUT, Executor
from duetime_worker.batching import CHANNEL_OPTIONS, AttemptCalls
from duetime_worker.config import Settings
from duetime_worker.consumer import LAG_SAMPLE_INTERVAL, DispatchConsumer
from duetime_worker.heartbeat import Heartbeats
from duetime_worker.http_target import HttpCaller
from duetime_worker.launchers import launcher_for
from duetime_worker.notifier import Notifier, NotifySettings
from duetime_worker.notify_consumer import DeadLetterConsumer
from duetime_worker.policy import TargetPolicy

log = logging.getLogger("duetime_worker")


async def serve(settings: Settings) -> None:
    warn_plaintext(settings.tls)
    metrics = start_metrics(settings.metrics_address, "worker")
    channel = scheduler_channel(
        settings.scheduler_addresses, settings.tls.client(Link.GRPC), CHANNEL_OPTIONS
    )
    stub: worker_service_pb2_grpc.WorkerServiceAsyncStub = (
        worker_service_pb2_grpc.WorkerServiceStub(channel)
    )
    # No token: the client certificate is the worker's credential (mTLS).
    metadata: tuple[tuple[str, str], ...] = ()
    if settings.worker_token:
        metadata = (("authorization", f"Bearer {settings.worker_token}"),)
    kafka_tls = settings.tls.client(Link.KAFKA)
    heartbeats = Heartbeats(stub, settings.worker_id, metadata, settings.heartbeat_interval)
    # A connection for every execution slot and notification in all, so calls to different
    # hosts never queue for the pool; to one host at most ``connections_per_host`` (reused
    # keep-alive connections: a fresh one for each of a herd's calls cost more than the wait).
    connections = settings.concurrency + settings.notify_concurrency
    _allow_open_files(connections)
    http = HttpCaller(
        TargetPolicy.parse(settings.target_allow),
        connection_limit=connections,
        connections_per_host=settings.connections_per_host,
    )
    calls = AttemptCalls(stub, metadata, RPC_TIMEOUT)
    launcher = launcher_for(settings)
    executor = Executor(
        stub,
        settings.worker_id,
        metadata,
        heartbeats,
        http,
        launcher,
        calls=calls,
        slots=settings.concurrency,
        starting=settings.start_concurrency,
        early=settings.early_starts,
    )
    # Messages held until their effective time count here, not against the execution slots.
    consumer = DispatchConsumer(
        settings.kafka_bootstrap,
        settings.group,
        f"duetime-worker-{settings.worker_id}",
        settings.max_pending,
        executor.process,
        tls=kafka_tls,
    )
    # Dead-letter notifications go through the same allow-listed client as targets.
    notifications = DeadLetterConsumer(
        settings.kafka_bootstrap,
        settings.notify_group,
        f"duetime-notifier-{settings.worker_id}",
        settings.notify_concurrency,
        Notifier(
            http,
            NotifySettings(
                timeout=settings.notify_timeout, give_up_after=settings.notify_give_up_after
            ),
        ),
        tls=kafka_tls,
    )
    server = GrpcServer(settings.health_address, [])
    # Consuming stops first; heartbeats go on while in-flight attempts finish.
    stop_consuming = asyncio.Event()
    stop_beating = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []

    async def start() -> None:
        await http.start()
        await launcher.start()  # orphans of an earlier worker go before anything runs
        await server.start()
        tasks.append(asyncio.create_task(heartbeats.run(stop_beating)))
        tasks.append(asyncio.create_task(consumer.run(stop_consuming)))
        tasks.append(asyncio.create_task(notifications.run(stop_consuming)))
        if metrics is not None:
            lag = sample_periodically(LAG_SAMPLE_INTERVAL, consumer.record_lag, stop_consuming)
            tasks.append(asyncio.create_task(lag))
        log.info(
            "worker serving",
            extra={
                "action": "serving",
                "worker_id": settings.worker_id,
                "group": settings.group,
                "port": server.port,
            },
        )
        print(f"DUETIME_WORKER_PORT={server.port}", flush=True)

    async def stop() -> None:
        await server.health.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
        # Nothing starts from here on: held messages are not to come due and run meanwhile.
        executor.stop()
        stop_consuming.set()
        if tasks:
            await asyncio.wait(tasks[1:])
        await asyncio.gather(
            consumer.drain(
                settings.shutdown_grace_seconds,
                lambda: heartbeats.hand_back_all("the worker is shutting down"),
            ),
            notifications.drain(settings.shutdown_grace_seconds),
        )
        stop_beating.set()
        if tasks:
            await asyncio.wait(tasks[:1], timeout=5)
        executor.tally.flush()
        await launcher.close()
        await calls.close()
        await http.close()
        await channel.close()
        await server.stop(0)
        log.info(
            "worker stopped",
            extra={"action": "stopped", "consumed": consumer.consumed, "beats": heartbeats.beats},
        )

    await run_until_terminated(start, stop)


# Descriptors beyond the target connections: Kafka, gRPC, logs, local processes' pipes.
_SPARE_FILES = 1024


def _allow_open_files(connections: int) -> None:
    """Raises the soft limit on open files towards what the connections need (a common default
    of 1,024 is less than the default slots), as far as the hard limit allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + _SPARE_FILES
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
        if raised < wanted:
            log.warning(
                "open-file limit below what the execution slots need",
                extra={"action": "open_file_limit", "limit": raised, "wanted": wanted},
            )


def main() -> None:
    configure_logging()
    setup_tracing("duetime-worker")
    quiet_aiokafka()
    run_service("duetime_worker", lambda: serve(Settings.from_env()))


if __name__ == "__main__":
    main()
