"""An in-process JobService and AdminService on a fresh database, and a client with per-team
and operator credentials."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import asyncpg
import grpc
from google.protobuf import timestamp_pb2
from google.rpc import error_details_pb2
from grpc import aio
from grpc_status import rpc_status

from duetime.admin.v1 import admin_service_pb2_grpc
from duetime.jobs.v1 import job_service_pb2_grpc, public_key_service_pb2_grpc
from duetime_api.__main__ import ADMIN_SERVICE_NAME, SERVICE_NAME
from duetime_api.admin_servicer import AdminServicer
from duetime_api.jobs import JobOperations
from duetime_api.public_key_servicer import SERVICE_NAME as PUBLIC_KEY_SERVICE_NAME
from duetime_api.public_key_servicer import JwksCache, PublicKeyServicer
from duetime_api.servicer import JobServicer
from duetime_infra.admin import create_operator_token, create_team
from duetime_infra.archive.reader import ArchiveReader
from duetime_infra.archive.settings import ArchiveSettings
from duetime_infra.grpc.auth import Role, TokenCache
from duetime_infra.grpc.interceptors import DuetimeInterceptor
from duetime_infra.grpc.server import GrpcServer
from duetime_infra.pg.jobs.store import JobStore
from duetime_infra.pg.pool import create_pool
from duetime_infra.pg.teams.store import principal_for
from duetime_infra.secrets.sealing import SecretBox
from testkit.secrets import secret_box


@dataclass
class ApiClient:
    stub: job_service_pb2_grpc.JobServiceAsyncStub
    token: str
    other_token: str
    team: str
    other_team: str
    address: str
    dsn: str
    admin: admin_service_pb2_grpc.AdminServiceAsyncStub
    operator_token: str

    def auth(self, token: str | None = None) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {token or self.token}"),)

    def job_name(self, job_id: str, team: str | None = None) -> str:
        return f"teams/{team or self.team}/jobs/{job_id}"


@asynccontextmanager
async def running_api(
    dsn: str, secrets: SecretBox | None = None, archive: ArchiveSettings | None = None
) -> AsyncIterator[ApiClient]:
    """The API on ``dsn``, sealing with ``secrets`` (default: the tests' keyring), reading
    archived runs from ``archive``."""
    conn = await asyncpg.connect(dsn)
    try:
        token = await create_team(conn, "team-a")
        other = await create_team(conn, "team-b")
        operator = await create_operator_token(conn)
    finally:
        await conn.close()
    pool = await create_pool(dsn, max_size=5)
    box = secrets or secret_box()
    store = JobStore(pool, box)
    server = GrpcServer(
        "127.0.0.1:0",
        [SERVICE_NAME, ADMIN_SERVICE_NAME, PUBLIC_KEY_SERVICE_NAME],
        interceptors=[
            DuetimeInterceptor(
                TokenCache(functools.partial(principal_for, pool)),
                {SERVICE_NAME: Role.TEAM, ADMIN_SERVICE_NAME: Role.OPERATOR},
                open_services=[PUBLIC_KEY_SERVICE_NAME],
            )
        ],
    )
    reader = None if archive is None else ArchiveReader(pool, archive)
    job_service_pb2_grpc.add_JobServiceServicer_to_server(
        JobServicer(JobOperations(store), reader), server.server
    )
    jwks = JwksCache(pool)
    admin_service_pb2_grpc.add_AdminServiceServicer_to_server(
        AdminServicer(pool, box, jwks), server.server
    )
    public_key_service_pb2_grpc.add_PublicKeyServiceServicer_to_server(
        PublicKeyServicer(jwks), server.server
    )
    await server.start()
    address = f"127.0.0.1:{server.port}"
    channel = aio.insecure_channel(address)
    try:
        yield ApiClient(
            job_service_pb2_grpc.JobServiceStub(channel),
            token,
            other,
            "team-a",
            "team-b",
            address,
            dsn,
            admin_service_pb2_grpc.AdminServiceStub(channel),
            operator,
        )
    finally:
        await channel.close()
        await server.stop(0)
        await pool.close()


@dataclass(frozen=True)
class RpcFailure:
    code: grpc.StatusCode
    reason: str
    fields: dict[str, str]
    message: str
    # google.rpc.QuotaFailure: quota id -> its "limit" and "usage" dimensions.
    quotas: dict[str, dict[str, str]] = field(default_factory=dict)


async def failure(call: Any) -> RpcFailure:
    """Awaits a call that must fail; returns its code, ErrorInfo reason and bad fields."""
    try:
        await call
    except aio.AioRpcError as error:
        status = rpc_status.from_call(error)  # type: ignore[arg-type]
        reason, fields, quotas = "", {}, {}
        if status is not None:
            for detail in status.details:
                if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                    info = error_details_pb2.ErrorInfo()
                    detail.Unpack(info)
                    reason = info.reason
                    assert info.domain == "duetime.dev"
                elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                    bad = error_details_pb2.BadRequest()
                    detail.Unpack(bad)
                    fields = {v.field: v.description for v in bad.field_violations}
                elif detail.Is(error_details_pb2.QuotaFailure.DESCRIPTOR):
                    quota = error_details_pb2.QuotaFailure()
                    detail.Unpack(quota)
                    quotas = {v.quota_id: dict(v.quota_dimensions) for v in quota.violations}
        return RpcFailure(error.code(), reason, fields, error.details() or "", quotas)
    raise AssertionError("the call succeeded but was expected to fail")


def at(timestamp: timestamp_pb2.Timestamp) -> datetime:
    """A Timestamp the API answered, as an aware UTC datetime."""
    return timestamp.ToDatetime(UTC)
