"""The services' gRPC server on a real socket."""

from __future__ import annotations

import pytest

from duetime_infra.grpc.server import GrpcServer


async def test_a_second_server_cannot_share_a_port_in_use() -> None:
    # gRPC's default SO_REUSEPORT let a second process bind a scheduler's port and take a
    # share of its connections: workers' starts then reached another database's scheduler.
    first = GrpcServer("127.0.0.1:0", [])
    await first.start()
    try:
        with pytest.raises(RuntimeError, match="bind"):
            GrpcServer(f"127.0.0.1:{first.port}", [])
    finally:
        await first.stop(0)
