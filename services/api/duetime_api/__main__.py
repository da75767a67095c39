"""`python -m duetime_api`: the job API (JobService, for teams) and the operator API
(AdminService, for operators)."""

from __future__ import annotations

import asyncio
import functools
import logging

from duetime.admin.v1 import admin_service_pb2, admin_service_pb2_grpc
from duetime.jobs.v1 import job_service_pb2, job_service_pb2_grpc, public_key_service_pb2_grpc
from duetime_api.admin_servicer import AdminServicer
from duetime_api.config import Settings
from duetime_api.jobs import JobOperations
from duetime_api.public_key_servicer import SERVICE_NAME as PUBLIC_KEY_SERVICE_NAME
from duetime_api.public_key_servicer import JwksCache, PublicKeyServicer
from duetime_api.servicer import JobServicer
from duetime_infra.archive.reader import ArchiveReader
from duetime_infra.grpc.auth import Role, TokenCache
from duetime_infra.grpc.interceptors import DuetimeInterceptor
from duetime_infra.grpc.server import GrpcServer, run_until_terminated
from duetime_infra.grpc.tls import server_credentials
from duetime_infra.logs import configure_logging
from duetime_infra.pg.jobs.store import JobStore
from duetime_infra.pg.pool import create_pool
from duetime_infra.pg.teams.store import principal_for
from duetime_infra.secrets.sealing import SecretBox
from duetime_infra.startup import announce_serving, require_schema, run_service
from duetime_infra.telemetry.metrics import sample_periodically, start_metrics
from duetime_infra.telemetry.tracing import setup_tracing
from duetime_infra.tls import Link, warn_plaintext

log = logging.getLogger("duetime_api")

SERVICE_NAME = job_service_pb2.DESCRIPTOR.services_by_name["JobService"].full_name
# How often the archive's new weeks are looked for (one a week appears).
WARM_SECONDS = 600.0
ADMIN_SERVICE_NAME = admin_service_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name


async def serve(settings: Settings) -> None:
    warn_plaintext(settings.tls)
    start_metrics(settings.metrics_address, "api")
    pg_tls = settings.tls.context(Link.POSTGRES)
    version = await require_schema(settings.pg_dsn, pg_tls)
    pool = await create_pool(settings.pg_dsn, max_size=settings.pg_pool_size, tls=pg_tls)
    try:
        secrets = SecretBox(settings.secret_keys)
        store = JobStore(pool, secrets)
        tokens = TokenCache(functools.partial(principal_for, pool))
        server = GrpcServer(
            settings.listen_address,
            [SERVICE_NAME, ADMIN_SERVICE_NAME, PUBLIC_KEY_SERVICE_NAME],
            interceptors=[
                DuetimeInterceptor(
                    tokens,
                    {SERVICE_NAME: Role.TEAM, ADMIN_SERVICE_NAME: Role.OPERATOR},
                    open_services=[PUBLIC_KEY_SERVICE_NAME],
                )
            ],
            credentials=server_credentials(settings.tls.server()),
        )
        archive = None if settings.archive is None else ArchiveReader(pool, settings.archive)
        job_service_pb2_grpc.add_JobServiceServicer_to_server(
            JobServicer(JobOperations(store), archive), server.server
        )
        jwks = JwksCache(pool)
        admin_service_pb2_grpc.add_AdminServiceServicer_to_server(
            AdminServicer(pool, secrets, jwks), server.server
        )
        public_key_service_pb2_grpc.add_PublicKeyServiceServicer_to_server(
            PublicKeyServicer(jwks), server.server
        )

        stopping = asyncio.Event()
        warming: list[asyncio.Task[None]] = []

        async def start() -> None:
            await server.start()
            if archive is not None:
                # Archived weeks' footers read ahead of the requests that need them.
                warming.append(
                    asyncio.create_task(sample_periodically(WARM_SECONDS, archive.warm, stopping))
                )
            announce_serving(log, "api", "DUETIME_API_PORT", server.port, schema_version=version)

        async def stop() -> None:
            stopping.set()
            await asyncio.gather(*warming)
            await server.stop(settings.shutdown_grace_seconds)

        await run_until_terminated(start, stop)
    finally:
        await pool.close()


def main() -> None:
    configure_logging()
    setup_tracing("duetime-api")
    run_service("duetime_api", lambda: serve(Settings.from_env()))


if __name__ == "__main__":
    main()
