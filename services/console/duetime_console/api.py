"""The console's one channel to the API, and calls made as the signed-in team or operator.

Every call carries the session's token as ``authorization: Bearer`` metadata and a deadline;
a failure becomes ``ApiError`` with the status details decoded (``duetime_client.status``),
for the page to show: the bad fields, the quota hit, an etag that no longer matches.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc
from google.protobuf.message import Message
from grpc import aio

from duetime.admin.v1 import admin_service_pb2_grpc
from duetime.jobs.v1 import job_service_pb2_grpc
from duetime_client.status import ErrorDetails
from duetime_infra.grpc.tls import channel_credentials
from duetime_infra.tls import ClientTls

# A page waits at most this long for one call: a person is looking at the page. A batch (up to
# 1,000 jobs or runs, each in a transaction of its own) is given longer, so it is not cut off
# half-way while its answer is on its way.
CALL_TIMEOUT_SECONDS = 10.0
BATCH_TIMEOUT_SECONDS = 120.0

Response = TypeVar("Response", bound=Message)


class ApiError(Exception):
    """A call the API refused or failed, with what its status says."""

    def __init__(self, details: ErrorDetails) -> None:
        super().__init__(f"{details.code}: {details.message}")
        self.details = details

    @property
    def code(self) -> str:
        return self.details.code

    @property
    def reason(self) -> str:
        return self.details.reason


class Api:
    """JobService and AdminService over one channel, shared by every request."""

    def __init__(self, address: str, tls: ClientTls | None) -> None:
        self.channel = (
            aio.insecure_channel(address)
            if tls is None
            else aio.secure_channel(address, channel_credentials(tls))
        )
        self.jobs = job_service_pb2_grpc.JobServiceStub(self.channel)
        self.admin = admin_service_pb2_grpc.AdminServiceStub(self.channel)

    async def call(
        self,
        rpc: Callable[..., Awaitable[Response]],
        request: Message,
        token: str,
        deadline_seconds: float = CALL_TIMEOUT_SECONDS,
    ) -> Response:
        metadata = (("authorization", f"Bearer {token}"),)
        try:
            return await rpc(request, metadata=metadata, timeout=deadline_seconds)
        except grpc.RpcError as error:
            raise ApiError(ErrorDetails.from_rpc_error(error)) from None

    async def close(self) -> None:
        await self.channel.close()
