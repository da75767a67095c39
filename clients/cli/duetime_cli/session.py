"""Where the CLI talks to Duetime: the address, the token, the channel and the service stubs.

Channels are made in one function, ``open_channel``: over TLS, the API verified with
``--ca-file`` (DUETIME_TLS_CA_FILE) or the system's CAs, unless ``--plaintext``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar

import grpc
from google.protobuf.message import Message

from duetime.jobs.v1 import job_service_pb2_grpc
from duetime_cli.failures import ExitCode, Failure

DEFAULT_API = "127.0.0.1:50051"
# Per call: long enough for a loaded server, short enough that a person is not left hanging.
CALL_TIMEOUT_SECONDS = 30.0

Response = TypeVar("Response", bound=Message)


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
    return grpc.secure_channel(address, grpc.ssl_channel_credentials(root))


@dataclass
class Session:
    """One command's connection: opened on first use, closed when the command ends."""

    address: str
    token: str
    team: str = ""
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

    # An operator service gets its stub here the same way (e.g. ``admin``).

    def call(self, rpc: Callable[..., Response], request: Message) -> Response:
        """Calls ``rpc`` with the bearer token and the per-call deadline."""
        if not self.token:
            raise Failure.local(
                ExitCode.AUTH,
                "UNAUTHENTICATED",
                "no token: pass --token or set DUETIME_TOKEN",
            )
        metadata = (("authorization", f"Bearer {self.token}"),)
        return rpc(request, metadata=metadata, timeout=CALL_TIMEOUT_SECONDS)

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None
