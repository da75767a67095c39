#!/opt/duetime/bin/python
"""duetime-health PORT: a Kubernetes exec probe for the api and the scheduler, which serve TLS
only (the kubelet's built-in gRPC probe speaks plaintext).

Asks the server on localhost:PORT for its grpc.health.v1 status over TLS as the pod's own
settings say (DUETIME_TLS_*, DUETIME_PLAINTEXT, read as the services read them): the server's
certificate is verified (it must name localhost) and the pod's certificate is presented, as a
scheduler that requires worker certificates asks every caller for one. Exits 0 when SERVING,
1 otherwise, with the reason on stderr.
"""

from __future__ import annotations

import sys
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from duetime_infra.config import ConfigError, EnvReader
from duetime_infra.grpc.tls import channel_credentials
from duetime_infra.tls import Link, read_tls

TIMEOUT_SECONDS = 3.0


def channel(address: str) -> grpc.Channel:
    env = EnvReader()
    tls = read_tls(env, serves=False, connects=[Link.GRPC]).client(Link.GRPC)
    env.finish()
    if tls is None:
        return grpc.insecure_channel(address)
    return grpc.secure_channel(address, channel_credentials(tls))


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].isdigit():
        print("usage: duetime-health PORT", file=sys.stderr)
        return 2
    address = f"localhost:{argv[0]}"
    try:
        with channel(address) as open_channel:
            stub: Any = health_pb2_grpc.HealthStub(open_channel)  # the stubs do not declare Check
            reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=TIMEOUT_SECONDS)
    except ConfigError as error:
        print(f"duetime-health: {error}", file=sys.stderr)
        return 1
    except grpc.RpcError as error:
        print(f"duetime-health: {address}: {error.code().name} {error.details()}", file=sys.stderr)
        return 1
    state = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        print(f"duetime-health: {address}: {state}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
