"""A grpc.aio server with reflection, the standard health service, and a clean SIGTERM; over
TLS when given credentials (``duetime_infra.grpc.tls``)."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable, Sequence

import grpc
from grpc import aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from duetime_infra.grpc.channels import SERVER_OPTIONS

log = logging.getLogger(__name__)


class GrpcServer:
    def __init__(
        self,
        address: str,
        service_names: Sequence[str],
        interceptors: Sequence[aio.ServerInterceptor] = (),
        credentials: grpc.ServerCredentials | None = None,
    ) -> None:
        # Clients ping to notice a frozen peer (``channels``): accepted, not punished.
        self.server = aio.server(interceptors=list(interceptors), options=SERVER_OPTIONS)
        self.health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        self._service_names = list(service_names)
        reflection.enable_server_reflection(
            [*self._service_names, health.SERVICE_NAME, reflection.SERVICE_NAME], self.server
        )
        if credentials is None:
            self.port = self.server.add_insecure_port(address)
        else:
            self.port = self.server.add_secure_port(address, credentials)
        if self.port == 0:
            raise RuntimeError(f"cannot listen on {address}")

    async def start(self) -> None:
        await self.server.start()
        for name in ["", *self._service_names]:
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)

    async def stop(self, grace: float) -> None:
        """Health goes NOT_SERVING first so balancers drain us, then calls get `grace` seconds."""
        for name in ["", *self._service_names]:
            await self.health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.server.stop(grace)


async def run_until_terminated(
    start: Callable[[], Awaitable[None]],
    stop: Callable[[], Awaitable[None]],
) -> None:
    """Starts, then waits for SIGTERM or SIGINT and stops cleanly."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    await start()
    try:
        await stopping.wait()
        log.info("shutting down", extra={"action": "shutdown"})
    finally:
        await stop()
