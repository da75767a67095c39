"""The gateway's settings and the Envoy configuration made from them: bad settings named at
once, TLS on both sides unless gRPC is plaintext, the api's name checked in its certificate,
and a descriptor set in which every public method has an HTTP binding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.api import annotations_pb2
from google.protobuf import descriptor_pb2

from duetime_gateway.config import Settings
from duetime_gateway.descriptors import SERVICES, descriptor_set
from duetime_gateway.envoy import RunFiles, bootstrap
from duetime_infra.config import ConfigError
from testkit.tls import Certs, make_certs


@pytest.fixture(scope="module")
async def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return await make_certs(tmp_path_factory.mktemp("certs"))


def config(env: dict[str, str]) -> dict[str, Any]:
    return bootstrap(Settings.from_env(env), RunFiles(Path("/run/gw")), b"")


def test_bad_settings_are_named_at_once() -> None:
    with pytest.raises(ConfigError) as error:
        Settings.from_env(
            {
                "DUETIME_GATEWAY_ADDRESS": "localhost:8443",
                "DUETIME_API_TARGET": "api",
                "DUETIME_GATEWAY_OPENAPI_FILE": "/no/such/openapi.yaml",
            }
        )
    problems = str(error.value)
    assert "DUETIME_GATEWAY_ADDRESS='localhost:8443': Envoy listens on an IP address" in problems
    assert "DUETIME_API_TARGET='api': expected host:port" in problems
    assert "DUETIME_GATEWAY_OPENAPI_FILE='/no/such/openapi.yaml': not a readable file" in problems
    assert "DUETIME_TLS_CERT_FILE, DUETIME_TLS_KEY_FILE: required to serve gRPC" in problems


def test_tls_on_both_sides_with_the_api_name_checked(certs: Certs) -> None:
    envoy = config({**certs.env(), "DUETIME_API_TARGET": "duetime-api:50051"})
    [listener] = envoy["static_resources"]["listeners"]
    [chain] = listener["filter_chains"]
    assert chain["transport_socket"]["name"] == "envoy.transport_sockets.tls"
    api = next(c for c in envoy["static_resources"]["clusters"] if c["name"] == "api")
    upstream = api["transport_socket"]["typed_config"]
    assert upstream["sni"] == "duetime-api"
    validation = upstream["common_tls_context"]["validation_context"]
    assert validation["trusted_ca"] == {"filename": certs.ca}
    assert validation["match_typed_subject_alt_names"] == [
        {"san_type": "DNS", "matcher": {"exact": "duetime-api"}}
    ]
    # A headless Service's name reaches every pod; their certificate names the api's Service.
    pods = config(
        {
            **certs.env(),
            "DUETIME_API_TARGET": "duetime-api-pods:50051",
            "DUETIME_API_SERVER_NAME": "duetime-api",
        }
    )
    api = next(c for c in pods["static_resources"]["clusters"] if c["name"] == "api")
    endpoint = api["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]
    assert endpoint["address"]["socket_address"]["address"] == "duetime-api-pods"
    assert api["transport_socket"]["typed_config"]["sni"] == "duetime-api"
    by_address = config({**certs.env(), "DUETIME_API_TARGET": "127.0.0.1:50051"})
    api = next(c for c in by_address["static_resources"]["clusters"] if c["name"] == "api")
    upstream = api["transport_socket"]["typed_config"]
    assert "sni" not in upstream
    assert upstream["common_tls_context"]["validation_context"][
        "match_typed_subject_alt_names"
    ] == [{"san_type": "IP_ADDRESS", "matcher": {"exact": "127.0.0.1"}}]


def test_plaintext_grpc_is_plain_http_on_both_sides() -> None:
    envoy = config({"DUETIME_PLAINTEXT": "grpc", "DUETIME_METRICS_ADDRESS": "0.0.0.0:9464"})
    listeners = envoy["static_resources"]["listeners"]
    assert [listener["name"] for listener in listeners] == ["gateway", "metrics"]
    assert all("transport_socket" not in lst["filter_chains"][0] for lst in listeners)
    clusters = envoy["static_resources"]["clusters"]
    assert [c["name"] for c in clusters] == ["api", "admin"]
    assert all("transport_socket" not in c for c in clusters)


def test_every_public_method_has_an_http_binding_in_the_descriptor_set() -> None:
    files = {f.name: f for f in descriptor_set().file}
    # The error details' types, for JSON error bodies.
    assert {"google/rpc/status.proto", "google/rpc/error_details.proto"} <= set(files)
    seen: set[str] = set()
    for file in files.values():
        # Each file comes after the files it imports.
        assert set(file.dependency) <= seen, file.name
        seen.add(file.name)
        for service in file.service:
            if f"{file.package}.{service.name}" not in SERVICES:
                continue
            for method in service.method:
                options = descriptor_pb2.MethodOptions.FromString(
                    method.options.SerializeToString()
                )
                rule = options.Extensions[annotations_pb2.http]
                assert rule.WhichOneof("pattern"), f"{service.name}.{method.name} has no binding"
    found = {
        f"{file.package}.{service.name}" for file in files.values() for service in file.service
    }
    assert set(SERVICES) <= found
