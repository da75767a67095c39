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

It also delivers dead-letter notifications to the teams' webhooks (``notify.consumer``), from
``duetime.deadletter`` in a consumer group of their own (``DUETIME_NOTIFY_GROUP``).
"""

from __future__ import annotations

import asyncio
import logging
import resource
from dataclasses import dataclass, field

from grpc import aio
from grpc_health.v1 import health_pb2

from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_infra.grpc.channels import scheduler_channel
from duetime_infra.grpc.server import GrpcServer, run_until_terminated
from duetime_infra.kafka.aiokafka_logs import quiet_aiokafka
from duetime_infra.logs import configure_logging
from duetime_infra.startup import announce_serving, run_service
from duetime_infra.telemetry.metrics import MetricsEndpoint, sample_periodically, start_metrics
from duetime_infra.telemetry.tracing import setup_tracing
from duetime_infra.tls import Link, warn_plaintext
from duetime_worker.attempt.executor import Executor
from duetime_worker.attempt.heartbeats import Heartbeats
from duetime_worker.attempt.scheduler_client import (
    CHANNEL_OPTIONS,
    RPC_TIMEOUT,
    AttemptCalls,
    fetch_from,
)
from duetime_worker.config import Settings
from duetime_worker.herd.governor import Herd
from duetime_worker.intake.consumer import LAG_SAMPLE_INTERVAL, DispatchConsumer
from duetime_worker.notify.consumer import DeadLetterConsumer
from duetime_worker.notify.notifier import Notifier, NotifySettings
from duetime_worker.targets.container.images import ImagePolicy
from duetime_worker.targets.container.launcher import (
    DisabledLauncher,
    Launcher,
    LocalProcessLauncher,
)
from duetime_worker.targets.container.podman import PodmanLauncher
from duetime_worker.targets.http.allow_list import TargetPolicy
from duetime_worker.targets.http.caller import HttpCaller
from duetime_worker.targets.http.signer import CallSigner

log = logging.getLogger("duetime_worker")


@dataclass
class SchedulerLink:
    """The channel to the schedulers' WorkerService and the worker's credentials on it."""

    channel: aio.Channel
    stub: worker_service_pb2_grpc.WorkerServiceAsyncStub
    metadata: tuple[tuple[str, str], ...]


@dataclass
class WorkerService:
    """The worker's parts, started and stopped in order by ``serve``."""

    settings: Settings
    link: SchedulerLink
    heartbeats: Heartbeats
    http: HttpCaller
    calls: AttemptCalls
    launcher: Launcher
    executor: Executor
    consumer: DispatchConsumer
    notifications: DeadLetterConsumer
    server: GrpcServer
    metrics: MetricsEndpoint | None
    # Consuming stops first; heartbeats go on while in-flight attempts finish.
    stop_consuming: asyncio.Event = field(default_factory=asyncio.Event)
    stop_beating: asyncio.Event = field(default_factory=asyncio.Event)
    beating: asyncio.Task[None] | None = None
    consuming: list[asyncio.Task[None]] = field(default_factory=list)

    async def start(self) -> None:
        await self.http.start()
        await self.launcher.start()  # orphans of an earlier worker go before anything runs
        await self.server.start()
        self.beating = asyncio.create_task(self.heartbeats.run(self.stop_beating))
        self.consuming.append(asyncio.create_task(self.consumer.run(self.stop_consuming)))
        self.consuming.append(asyncio.create_task(self.notifications.run(self.stop_consuming)))
        if self.metrics is not None:
            lag = sample_periodically(
                LAG_SAMPLE_INTERVAL, self.consumer.record_lag, self.stop_consuming
            )
            self.consuming.append(asyncio.create_task(lag))
        settings = self.settings
        announce_serving(
            log,
            "worker",
            "DUETIME_WORKER_PORT",
            self.server.port,
            worker_id=settings.worker_id,
            group=settings.group,
        )

    async def stop(self) -> None:
        await self.server.health.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
        # Nothing starts from here on: held messages are not to come due and run meanwhile.
        self.executor.stop()
        self.stop_consuming.set()
        if self.consuming:
            await asyncio.wait(self.consuming)
        await self._drain()
        self.stop_beating.set()
        if self.beating is not None:
            await asyncio.wait([self.beating], timeout=5)
        self.executor.tally.flush()
        await self.launcher.close()
        await self.calls.close()
        await self.http.close()
        await self.link.channel.close()
        await self.server.stop(0)
        log.info(
            "worker stopped",
            extra={
                "action": "stopped",
                "consumed": self.consumer.consumed,
                "beats": self.heartbeats.beats,
            },
        )

    async def _drain(self) -> None:
        """Running attempts finish within the grace; the rest are handed back."""
        grace = self.settings.shutdown_grace_seconds
        await asyncio.gather(
            self.consumer.drain(
                grace, lambda: self.heartbeats.hand_back_all("the worker is shutting down")
            ),
            self.notifications.drain(grace),
        )


def scheduler_link(settings: Settings) -> SchedulerLink:
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
    return SchedulerLink(channel, stub, metadata)


def http_caller(settings: Settings, link: SchedulerLink) -> HttpCaller:
    # A connection for every execution slot and notification in all, so calls to different
    # hosts never queue for the pool; to one host at most ``connections_per_host`` (reused
    # keep-alive connections: a fresh one for each of a herd's calls cost more than the wait).
    connections = settings.concurrency + settings.notify_concurrency
    _allow_open_files(connections)
    return HttpCaller(
        TargetPolicy.parse(settings.target_allow),
        connection_limit=connections,
        connections_per_host=settings.connections_per_host,
        connect_timeout=settings.connect_timeout,
        signer=CallSigner(
            fetch_from(link.stub, link.metadata, settings.worker_id), settings.signing_issuer
        ),
    )


def launcher_for(settings: Settings) -> Launcher:
    """The launcher for container targets that the operator chose
    (``DUETIME_CONTAINER_LAUNCHER``)."""
    if settings.container_launcher == "podman":
        images = ImagePolicy.parse(settings.container_images)
        return PodmanLauncher(settings.podman, images, settings.worker_id)
    if settings.container_launcher == "local":
        return LocalProcessLauncher(
            settings.local_launcher_commands, settings.local_launcher_concurrency
        )
    return DisabledLauncher()


def consumers(
    settings: Settings, executor: Executor, http: HttpCaller
) -> tuple[DispatchConsumer, DeadLetterConsumer]:
    kafka_tls = settings.tls.client(Link.KAFKA)
    # Messages held until their effective time count here, not against the execution slots.
    dispatches = DispatchConsumer(
        settings.kafka_bootstrap,
        settings.group,
        f"duetime-worker-{settings.worker_id}",
        settings.max_pending,
        executor.process,
        tls=kafka_tls,
    )
    # Dead-letter notifications go through the same allow-listed client as targets.
    notify = NotifySettings(
        timeout=settings.notify_timeout, give_up_after=settings.notify_give_up_after
    )
    notifications = DeadLetterConsumer(
        settings.kafka_bootstrap,
        settings.notify_group,
        f"duetime-notifier-{settings.worker_id}",
        settings.notify_concurrency,
        Notifier(http, notify),
        tls=kafka_tls,
    )
    return dispatches, notifications


def build_worker(settings: Settings) -> WorkerService:
    metrics = start_metrics(settings.metrics_address, "worker")
    link = scheduler_link(settings)
    herd = Herd()  # what a herd changes, asked by the executor and the heartbeats
    heartbeats = Heartbeats(
        link.stub, settings.worker_id, link.metadata, settings.heartbeat_interval, herd=herd
    )
    http = http_caller(settings, link)
    calls = AttemptCalls(link.stub, link.metadata, RPC_TIMEOUT)
    launcher = launcher_for(settings)
    executor = Executor(
        link.stub,
        settings.worker_id,
        link.metadata,
        heartbeats,
        http,
        launcher,
        herd=herd,
        calls=calls,
        slots=settings.concurrency,
        starting=settings.start_concurrency,
        early=settings.early_starts,
    )
    dispatches, notifications = consumers(settings, executor, http)
    server = GrpcServer(settings.health_address, [])
    return WorkerService(
        settings,
        link,
        heartbeats,
        http,
        calls,
        launcher,
        executor,
        dispatches,
        notifications,
        server,
        metrics,
    )


async def serve(settings: Settings) -> None:
    warn_plaintext(settings.tls)
    worker = build_worker(settings)
    await run_until_terminated(worker.start, worker.stop)


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
