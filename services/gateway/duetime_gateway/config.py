"""The gateway's settings, read once from the environment.

Its listener and its connection to the api follow the ``grpc`` link of ``DUETIME_PLAINTEXT``
(``duetime_infra.tls``): HTTPS with ``DUETIME_TLS_CERT_FILE``/``KEY_FILE`` and the api verified
with ``DUETIME_TLS_CA_FILE``, unless gRPC is plaintext, then plain HTTP to a plaintext api.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from duetime_infra.config import EnvReader
from duetime_infra.tls import Link, TlsSettings, read_tls, readable_file

OPENAPI_FILE = "DUETIME_GATEWAY_OPENAPI_FILE"


@dataclass(frozen=True)
class Settings:
    # host:port of the HTTPS listener (HTTP/JSON, gRPC-web, gRPC).
    listen_address: str
    # host:port of the api (a name resolves to every address it has, balanced per request).
    api_target: str
    # The name the api's certificate must carry (and the TLS server name sent): the target's
    # host unless set, e.g. a headless Service's name, whose pods serve the api Service's name.
    api_server_name: str
    # host:port of the Prometheus scrape endpoint (Envoy's statistics); "": none.
    metrics_address: str
    # The OpenAPI document served at /v1/openapi.yaml (openapi/); "": not served.
    openapi_file: str
    # Envoy's worker threads.
    concurrency: int
    shutdown_grace_seconds: float
    tls: TlsSettings

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = EnvReader(environ)
        api_target = env.address("DUETIME_API_TARGET", "127.0.0.1:50051")
        settings = cls(
            listen_address=env.address("DUETIME_GATEWAY_ADDRESS", "127.0.0.1:8443"),
            api_target=api_target,
            api_server_name=env.text("DUETIME_API_SERVER_NAME", "").strip()
            or api_target.rpartition(":")[0].strip("[]"),
            metrics_address=env.optional_address("DUETIME_METRICS_ADDRESS"),
            openapi_file=readable_file(env, OPENAPI_FILE),
            concurrency=env.integer("DUETIME_GATEWAY_CONCURRENCY", 2, low=1, high=64),
            shutdown_grace_seconds=env.seconds(
                "DUETIME_SHUTDOWN_GRACE_SECONDS", 10, low=0, high=600
            ).total_seconds(),
            tls=read_tls(env, serves=True, connects=[Link.GRPC]),
        )
        for name, address in (
            ("DUETIME_GATEWAY_ADDRESS", settings.listen_address),
            ("DUETIME_METRICS_ADDRESS", settings.metrics_address),
        ):
            if address and not _is_ip(address.rpartition(":")[0]):
                env.problem(f"{name}={address!r}: Envoy listens on an IP address, not a name")
        env.finish()
        return settings


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True
