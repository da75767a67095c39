"""Where the CLI talks to Duetime: the address, the tokens, the channel and the service stubs.

Job commands send the team token; operator commands (AdminService) send the operator token,
or the team token when no operator token is given (a shell that holds only an operator's).

Channels are made in one function, ``open_channel``: over TLS, the API verified with
``--ca-file`` (DUETIME_TLS_CA_FILE) or the system's CAs, unless ``--plaintext`` (or
``DUETIME_PLAINTEXT`` naming ``grpc`` or ``all``, the setting the services read). A server
whose certificate those CAs do not trust is told as such (exit 7), not as UNAVAILABLE.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from duetime.admin.v1 import admin_service_pb2_grpc
from duetime.jobs.v1 import job_service_pb2_grpc
from duetime_cli.exits import ExitCode
from duetime_cli.failures import Failure

DEFAULT_API = "127.0.0.1:50051"
_PEM_CERTIFICATE = b"-----BEGIN CERTIFICATE-----"
# How gRPC's status details tell that the TLS handshake refused the server's certificate, and
# why (OpenSSL's words: "unable to get local issuer certificate", "certificate has expired").
_UNVERIFIED = re.compile(r"CERTIFICATE_VERIFY_FAILED: ([^:]+)")
# Per call: long enough for a loaded server, short enough that a person is not left hanging.
CALL_TIMEOUT_SECONDS = 30.0
# A batch changes up to 1,000 jobs or runs, each in a transaction of its own.
BATCH_TIMEOUT_SECONDS = 120.0

Response = TypeVar("Response", bound=Message)


def plaintext_by_env() -> bool:
    """Whether DUETIME_PLAINTEXT lets Duetime's gRPC go without TLS, as for the services."""
    named = os.environ.get("DUETIME_PLAINTEXT", "").replace(" ", "").lower().split(",")
    return "grpc" in named or "all" in named


def open_channel(address: str, ca_file: str = "", plaintext: bool = False) -> grpc.Channel:
    """The one place a channel to Duetime is made."""
    if plaintext:
        return grpc.insecure_channel(address)
    root = None
    if ca_file:
        try:
            with open(ca_file, "rb") as file:
                root = file.read()
        except OSError as error:
            message = f"cannot read --ca-file {ca_file}: {error.strerror}"
            raise Failure.local(ExitCode.USAGE, "INVALID_ARGUMENT", message) from None
        if _PEM_CERTIFICATE not in root:
            message = f"--ca-file {ca_file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
            raise Failure.local(ExitCode.USAGE, "INVALID_ARGUMENT", message)
    return grpc.secure_channel(address, grpc.ssl_channel_credentials(root))


def untrusted(error: grpc.RpcError, address: str, ca_file: str) -> Failure | None:
    """The failure to tell when the call failed because the server's certificate was not
    trusted (gRPC says UNAVAILABLE, as if trying again could help): which CAs were tried and
    where the right one goes. None for any other error."""
    call: Any = error
    why = _UNVERIFIED.search(call.details() or "")
    if call.code() != grpc.StatusCode.UNAVAILABLE or why is None:
        return None
    tried = f"the CA in {ca_file}" if ca_file else "the system's CAs"
    message = (
        f"the server's certificate at {address} was not trusted with {tried} ({why[1]}): "
        "give the CA that signed it with --ca-file FILE or DUETIME_TLS_CA_FILE"
    )
    return Failure(ExitCode.AUTH, "UNAUTHENTICATED", message, reason="SERVER_CERTIFICATE_UNTRUSTED")


@dataclass
class Session:
    """One command's connection: opened on first use, closed when the command ends."""

    address: str
    token: str
    team: str = ""
    operator_token: str = ""
    ca_file: str = ""
    plaintext: bool = False
    _channel: grpc.Channel | None = field(default=None, repr=False)

    @property
    def channel(self) -> grpc.Channel:
        if self._channel is None:
            self._channel = open_channel(self.address, self.ca_file, self.plaintext)
        return self._channel

    @cached_property
    def jobs(self) -> job_service_pb2_grpc.JobServiceStub:
        return job_service_pb2_grpc.JobServiceStub(self.channel)

    @cached_property
    def admin(self) -> admin_service_pb2_grpc.AdminServiceStub:
        return admin_service_pb2_grpc.AdminServiceStub(self.channel)

    def call(
        self,
        rpc: Callable[..., Response],
        request: Message,
        *,
        operator: bool = False,
        timeout: float = CALL_TIMEOUT_SECONDS,
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
        try:
            return rpc(request, metadata=metadata, timeout=timeout)
        except grpc.RpcError as error:
            failure = untrusted(error, self.address, self.ca_file)
            if failure is None:
                raise
            raise failure from None

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None
