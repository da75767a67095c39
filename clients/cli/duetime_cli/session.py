"""Where the CLI talks to Duetime: the address, the tokens, the channel and the service stubs.

Job commands send the team token; operator commands (AdminService) send the operator token,
or the team token when no operator token is given (a shell that holds only an operator's).

Channels are made in one function, ``open_channel``: the API listens in plaintext today, and a
TLS option belongs there alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar

import grpc
from google.protobuf.message import Message

from duetime.admin.v1 import admin_service_pb2_grpc
from duetime.jobs.v1 import job_service_pb2_grpc
from duetime_cli.failures import ExitCode, Failure

DEFAULT_API = "127.0.0.1:50051"
# Per call: long enough for a loaded server, short enough that a person is not left hanging.
CALL_TIMEOUT_SECONDS = 30.0

Response = TypeVar("Response", bound=Message)


def open_channel(address: str) -> grpc.Channel:
    """The one place a channel to Duetime is made."""
    return grpc.insecure_channel(address)


@dataclass
class Session:
    """One command's connection: opened on first use, closed when the command ends."""

    address: str
    token: str
    team: str = ""
    operator_token: str = ""
    _channel: grpc.Channel | None = field(default=None, repr=False)

    @property
    def channel(self) -> grpc.Channel:
        if self._channel is None:
            self._channel = open_channel(self.address)
        return self._channel

    @cached_property
    def jobs(self) -> job_service_pb2_grpc.JobServiceStub:
        return job_service_pb2_grpc.JobServiceStub(self.channel)

    @cached_property
    def admin(self) -> admin_service_pb2_grpc.AdminServiceStub:
        return admin_service_pb2_grpc.AdminServiceStub(self.channel)

    def call(
        self, rpc: Callable[..., Response], request: Message, *, operator: bool = False
    ) -> Response:
        """Calls ``rpc`` with the bearer token (the operator's for ``operator``) and the
        per-call deadline."""
        token = (self.operator_token or self.token) if operator else self.token
        if not token:
            raise Failure.local(
                ExitCode.AUTH,
                "UNAUTHENTICATED",
                "no operator token: pass --operator-token or set DUETIME_OPERATOR_TOKEN"
                if operator
                else "no token: pass --token or set DUETIME_TOKEN",
            )
        metadata = (("authorization", f"Bearer {token}"),)
        return rpc(request, metadata=metadata, timeout=CALL_TIMEOUT_SECONDS)

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None
