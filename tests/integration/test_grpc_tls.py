"""Duetime's gRPC over TLS, for real: clients verify the server, a server follows its
certificate files as they change (and keeps serving the old pair while the new one is broken),
and a WorkerService that requires client certificates takes a verified one instead of a token
while refusing callers without one."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc import aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_infra.grpc.server import GrpcServer
from duetime_infra.grpc.tls import channel_credentials, server_credentials
from duetime_infra.tls import ClientTls
from testkit.api import failure
from testkit.tls import Certs, certificate_in, certificate_served, make_certs
from testkit.worker_api import WorkerClient, running_worker_api

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Certs, Path, GrpcServer]]:
    """A health-only server over TLS from copies of a certificate the test can replace."""
    certs = await make_certs(tmp_path / "a")
    files = tmp_path / "served"
    files.mkdir()
    for name in ("cert.pem", "key.pem"):
        shutil.copy(certs.directory / name, files / name)
    server = GrpcServer("127.0.0.1:0", [], credentials=server_credentials(Certs(files).server()))
    await server.start()
    try:
        yield certs, files, server
    finally:
        await server.stop(0)


def health_stub(channel: aio.Channel) -> Any:
    stub: Any = health_pb2_grpc.HealthStub(channel)  # the stubs do not declare Check
    return stub


async def health(port: int, tls: ClientTls) -> int:
    async with aio.secure_channel(f"127.0.0.1:{port}", channel_credentials(tls)) as channel:
        answer = await health_stub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
        return int(answer.status)


async def test_clients_verify_the_server(
    served: tuple[Certs, Path, GrpcServer], tmp_path: Path
) -> None:
    certs, _, server = served
    assert await health(server.port, certs.client()) == health_pb2.HealthCheckResponse.SERVING
    stranger = await make_certs(tmp_path / "stranger")
    with pytest.raises(aio.AioRpcError) as refused:
        await health(server.port, stranger.client())
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    async with aio.insecure_channel(f"127.0.0.1:{server.port}") as plaintext:
        with pytest.raises(aio.AioRpcError):
            await health_stub(plaintext).Check(health_pb2.HealthCheckRequest(), timeout=2)


async def test_the_server_follows_its_certificate_files(
    served: tuple[Certs, Path, GrpcServer],
) -> None:
    certs, files, server = served
    assert await certificate_served(server.port, certs.ca) == certificate_in(files / "cert.pem")
    async with aio.secure_channel(
        f"127.0.0.1:{server.port}", channel_credentials(certs.client())
    ) as open_channel:
        stub = health_stub(open_channel)
        await stub.Check(health_pb2.HealthCheckRequest(), timeout=5)

        # A renewal lands the way deployments write files: each moved into place. A new
        # handshake gets the new certificate; the connection already open keeps working.
        await make_certs(certs.directory, renew=True)
        for name in ("key.pem", "cert.pem"):
            shutil.copy(certs.directory / name, files / f"{name}.new")
            os.replace(files / f"{name}.new", files / name)
        second = certificate_in(files / "cert.pem")
        assert await certificate_served(server.port, certs.ca) == second
        await stub.Check(health_pb2.HealthCheckRequest(), timeout=5)

    # Half a renewal (a key that does not match the certificate) is not served: the last
    # whole pair stays, and the next whole one is taken.
    await make_certs(certs.directory, renew=True)
    shutil.copy(certs.directory / "key.pem", files / "key.pem")
    assert await certificate_served(server.port, certs.ca) == second
    assert await health(server.port, certs.client()) == health_pb2.HealthCheckResponse.SERVING
    shutil.copy(certs.directory / "cert.pem", files / "cert.pem")
    assert await certificate_served(server.port, certs.ca) == certificate_in(files / "cert.pem")


@pytest.fixture
async def workers_ca(tmp_path: Path) -> Certs:
    return await make_certs(tmp_path / "stack")


async def refused_start(w: WorkerClient, metadata: tuple[tuple[str, str], ...]) -> grpc.StatusCode:
    request = wpb.StartAttemptRequest(run_id="not-a-uuid", delivery_id="d", worker_id="w")
    return (await failure(w.stub.StartAttempt(request, metadata=metadata, timeout=5))).code


async def test_a_worker_certificate_is_its_credential(db_dsn: str, workers_ca: Certs) -> None:
    server = workers_ca.server(client_ca=workers_ca.ca)
    async with running_worker_api(db_dsn, server_tls=server, client_tls=workers_ca.client()) as w:
        # No token: the verified certificate authenticates; the call gets as far as the
        # request's own check.
        assert await refused_start(w, ()) == grpc.StatusCode.INVALID_ARGUMENT
        assert await refused_start(w, w.auth()) == grpc.StatusCode.INVALID_ARGUMENT
        # No certificate, or one another CA signed: no connection at all.
        for tls in (workers_ca.client(with_cert=False), (await _stranger(workers_ca)).client()):
            async with aio.secure_channel(w.address, channel_credentials(tls)) as channel:
                stub = worker_service_pb2_grpc.WorkerServiceStub(channel)
                request = wpb.StartAttemptRequest(run_id="x", delivery_id="d", worker_id="w")
                with pytest.raises(aio.AioRpcError) as refused:
                    await stub.StartAttempt(request, metadata=w.auth(), timeout=5)
                assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


async def _stranger(certs: Certs) -> Certs:
    """A certificate for the same names from a CA of its own, and that CA trusting the
    server's: what a client of another deployment holds."""
    other = await make_certs(certs.directory.parent / "stranger")
    shutil.copy(certs.ca, other.directory / "ca.pem")  # trusts our server
    return other


async def test_without_a_worker_ca_workers_send_tokens(db_dsn: str, workers_ca: Certs) -> None:
    async with running_worker_api(
        db_dsn, server_tls=workers_ca.server(), client_tls=workers_ca.client(with_cert=False)
    ) as w:
        assert await refused_start(w, ()) == grpc.StatusCode.UNAUTHENTICATED
        assert await refused_start(w, w.auth()) == grpc.StatusCode.INVALID_ARGUMENT
