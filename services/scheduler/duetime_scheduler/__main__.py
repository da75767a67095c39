"""`python -m duetime_scheduler`: the partition scheduler.

Leases its fair share of the 1,024 partitions in etcd; for those it claims due runs (fenced by
the partitions' tokens), requeues retries that are due and closes attempts whose lease or
deadline passed. It also serves WorkerService, the attempt leases workers hold, for any run.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence

import asyncpg

from duetime.worker.v1 import worker_service_pb2, worker_service_pb2_grpc
from duetime_core.attempts import AttemptSettings
from duetime_infra.etcd.partitions import PartitionLeases
from duetime_infra.grpc.auth import Role, TokenCache
from duetime_infra.grpc.interceptors import DuetimeInterceptor
from duetime_infra.grpc.server import GrpcServer, run_until_terminated
from duetime_infra.grpc.tls import server_credentials
from duetime_infra.logs import configure_logging
from duetime_infra.pg.attempts.reaper import reap_expired_attempts
from duetime_infra.pg.attempts.store import AttemptStore
from duetime_infra.pg.dispatch.spec_cache import SpecCache
from duetime_infra.pg.fencing import FencingToken
from duetime_infra.pg.pool import create_pool
from duetime_infra.pg.teams.store import principal_for
from duetime_infra.secrets.sealing import SecretBox
from duetime_infra.startup import announce_serving, require_schema, run_service
from duetime_infra.telemetry.metrics import start_metrics
from duetime_infra.telemetry.tracing import setup_tracing
from duetime_infra.tls import Link, warn_plaintext
from duetime_scheduler.claimer import Claimer, OwnerTask, hand_over
from duetime_scheduler.config import Settings
from duetime_scheduler.maintenance import PartitionMaintenance
from duetime_scheduler.worker_servicer import WorkerServicer

log = logging.getLogger("duetime_scheduler")

SERVICE_NAME = worker_service_pb2.DESCRIPTOR.services_by_name["WorkerService"].full_name
# Rows per owner-task transaction; the claim loop runs them every pass.
OWNER_BATCH = 500


def owner_tasks(maintenance: PartitionMaintenance) -> list[OwnerTask]:
    async def expiries(pool: asyncpg.Pool[asyncpg.Record], tokens: Sequence[FencingToken]) -> int:
        return await reap_expired_attempts(pool, tokens, OWNER_BATCH)

    return [expiries, maintenance]


async def serve(settings: Settings) -> None:
    warn_plaintext(settings.tls)
    start_metrics(settings.metrics_address, "scheduler")
    pg_tls = settings.tls.context(Link.POSTGRES)
    version = await require_schema(settings.pg_dsn, pg_tls)
    pool = await create_pool(
        settings.pg_dsn,
        min_size=2,
        max_size=settings.pg_pool_size,
        server_settings=settings.session_settings,
        tls=pg_tls,
    )
    leases = PartitionLeases(
        settings.etcd_endpoint,
        settings.scheduler_id,
        ttl=settings.partition_lease_ttl.total_seconds(),
        safety_margin=settings.partition_safety_margin.total_seconds(),
        epoch=settings.etcd_epoch,
        prefix=settings.etcd_prefix,
        tls=settings.tls.client(Link.ETCD),
    )
    # One cache of decoded job definitions: the claim decodes a run's, its start reads it again.
    specs = SpecCache()
    attempts = AttemptStore(
        pool,
        AttemptSettings(lease=settings.attempt_lease, timeout_grace=settings.attempt_grace),
        specs=specs,
    )
    tokens = TokenCache(functools.partial(principal_for, pool))
    # With a worker CA, the server requires client certificates and a verified one is a worker.
    server_tls = settings.tls.server(settings.worker_client_ca_file)
    certificate_role = Role.WORKER if settings.worker_client_ca_file else None
    server = GrpcServer(
        settings.listen_address,
        [SERVICE_NAME],
        interceptors=[DuetimeInterceptor(tokens, {SERVICE_NAME: Role.WORKER}, certificate_role)],
        credentials=server_credentials(server_tls),
    )
    worker_service_pb2_grpc.add_WorkerServiceServicer_to_server(
        WorkerServicer(attempts, SecretBox(settings.secret_keys)), server.server
    )
    maintenance = PartitionMaintenance(archive=settings.archive)
    claimer = Claimer(pool, leases, settings, owner_tasks(maintenance), specs)
    stopping = asyncio.Event()
    claiming: asyncio.Task[None] | None = None

    async def start() -> None:
        nonlocal claiming
        await leases.start()
        await server.start()
        claiming = asyncio.create_task(claimer.run(stopping))
        announce_serving(
            log,
            "scheduler",
            "DUETIME_SCHEDULER_PORT",
            server.port,
            scheduler_id=settings.scheduler_id,
            schema_version=version,
        )

    async def stop() -> None:
        # The partitions go back at once; WorkerService serves the workers' attempts (for any
        # partition's runs) through the grace. The archive's child process ends with the pass.
        await hand_over(leases, stopping, claiming, settings.shutdown_grace_seconds)
        await maintenance.close()
        await server.stop(settings.shutdown_grace_seconds)
        await pool.close()

    await run_until_terminated(start, stop)


def main() -> None:
    configure_logging()
    setup_tracing("duetime-scheduler")
    run_service("duetime_scheduler", lambda: serve(Settings.from_env()))


if __name__ == "__main__":
    main()
