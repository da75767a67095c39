"""Envoy's bootstrap configuration for the gateway, made from its settings.

One listener serves the api's HTTP/JSON bindings (``grpc_json_transcoder``, from the
``google.api.http`` options in the descriptor set), gRPC-web (``grpc_web``) and gRPC itself,
and forwards them as gRPC to the api, over TLS verified with the CA. HTTP headers reach the api
as gRPC metadata (``Authorization`` included); a gRPC error comes back as a JSON
``google.rpc.Status`` with its details, under the HTTP status Google's mapping gives its code.
``/healthz`` answers 200 until the gateway drains; ``/v1/openapi.yaml`` serves the OpenAPI
document when one is configured; any other path is 404.
"""

from __future__ import annotations

import base64
import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duetime_gateway.config import Settings
from duetime_gateway.descriptors import SERVICES
from duetime_infra.tls import ClientTls, Link

Json = dict[str, Any]

HEALTH_PATH = "/healthz"
OPENAPI_PATH = "/v1/openapi.yaml"
# Envoy's per-request cap for every route; a gRPC client's shorter grpc-timeout wins.
REQUEST_TIMEOUT = "60s"
# A direct response's body is capped at 4 KiB unless the route configuration says more.
MAX_DIRECT_RESPONSE = 4 * 1024 * 1024

# Client connections at once, beyond which new ones are refused.
MAX_CONNECTIONS = 10_000

_TYPES = "type.googleapis.com/envoy.extensions"
_TRANSCODER = "envoy.filters.http.grpc_json_transcoder"
# PublicKeyService.GetJwks's HTTP path.
JWKS_PATHS = r"/v1/teams/[^/]+/jwks\.json"
_HCM = "envoy.filters.network.http_connection_manager"
_ROUTER = {
    "name": "envoy.filters.http.router",
    "typed_config": {"@type": f"{_TYPES}.filters.http.router.v3.Router"},
}


@dataclass(frozen=True)
class RunFiles:
    """What the gateway writes for Envoy in its run directory."""

    directory: Path

    @property
    def config(self) -> Path:
        return self.directory / "envoy.json"

    @property
    def admin_socket(self) -> Path:
        return self.directory / "admin.sock"

    @property
    def server_secret(self) -> Path:
        """The listener's certificate and key as an SDS resource: Envoy watches the files it
        names and serves renewed ones to new connections."""
        return self.directory / "server-certificate.json"


def write_config(settings: Settings, files: RunFiles, descriptors: bytes) -> None:
    files.directory.mkdir(parents=True, exist_ok=True)
    tls = settings.tls.server()
    if tls is not None:
        secret = {
            "@type": f"{_TYPES}.transport_sockets.tls.v3.Secret",
            "name": "server",
            "tls_certificate": {
                "certificate_chain": {"filename": tls.cert_file},
                "private_key": {"filename": tls.key_file},
            },
        }
        files.server_secret.write_text(json.dumps({"resources": [secret]}, indent=2))
    files.config.write_text(json.dumps(bootstrap(settings, files, descriptors), indent=2))


def bootstrap(settings: Settings, files: RunFiles, descriptors: bytes) -> Json:
    listeners = [_api_listener(settings, files, descriptors)]
    clusters = [_api_cluster(settings)]
    if settings.metrics_address:
        listeners.append(_metrics_listener(settings.metrics_address))
        clusters.append(_admin_cluster(files))
    return {
        "node": {"id": "duetime-gateway", "cluster": "duetime-gateway"},
        "admin": {"address": {"pipe": {"path": str(files.admin_socket), "mode": 0o600}}},
        "static_resources": {"listeners": listeners, "clusters": clusters},
        "overload_manager": {
            "resource_monitors": [
                {
                    "name": "envoy.resource_monitors.global_downstream_max_connections",
                    "typed_config": {
                        "@type": f"{_TYPES}.resource_monitors.downstream_connections.v3."
                        "DownstreamConnectionsConfig",
                        "max_active_downstream_connections": MAX_CONNECTIONS,
                    },
                }
            ]
        },
    }


def socket_address(address: str) -> Json:
    host, _, port = address.rpartition(":")
    return {"socket_address": {"address": host.strip("[]"), "port_value": int(port)}}


def _http_manager(stat_prefix: str, routes: Json, filters: list[Json]) -> Json:
    return {
        "name": _HCM,
        "typed_config": {
            "@type": f"{_TYPES}.filters.network.http_connection_manager.v3.HttpConnectionManager",
            "stat_prefix": stat_prefix,
            "codec_type": "AUTO",
            # An edge proxy: the client's own address, and no trust in its x-envoy-* headers.
            "use_remote_address": True,
            "normalize_path": True,
            "merge_slashes": True,
            "common_http_protocol_options": {"headers_with_underscores_action": "REJECT_REQUEST"},
            "route_config": routes,
            "http_filters": [*filters, _ROUTER],
            "local_reply_config": _local_replies(),
        },
    }


# Envoy's own answers, by HTTP status, and the gRPC code each stands for.
_LOCAL_REPLY_CODES = {400: 3, 404: 5, 413: 3, 429: 8, 431: 3, 502: 14, 503: 14, 504: 4}


def _local_replies() -> Json:
    """What Envoy answers itself to an HTTP/JSON request (a body the transcoder cannot read,
    no api to reach) as a google.rpc.Status in JSON too, like the api's errors. A gRPC or
    gRPC-web call gets them as grpc-status and grpc-message, untouched."""
    not_grpc = {
        "or_filter": {
            "filters": [
                {
                    "header_filter": {
                        "header": {
                            "name": "content-type",
                            "string_match": {"prefix": "application/grpc"},
                            "invert_match": True,
                            "treat_missing_header_as_empty": True,
                        }
                    }
                },
                # A transcoded call (its content-type is gRPC's by now) keeps its HTTP path here.
                {
                    "header_filter": {
                        "header": {"name": "x-envoy-original-path", "present_match": True}
                    }
                },
            ]
        }
    }
    mappers = []
    for status, code in _LOCAL_REPLY_CODES.items():
        comparison = {"op": "EQ", "value": {"default_value": status, "runtime_key": "unused"}}
        status_is = {"status_code_filter": {"comparison": comparison}}
        body = {"code": code, "message": "%LOCAL_REPLY_BODY%", "details": []}
        mappers.append(
            {
                "filter": {"and_filter": {"filters": [status_is, not_grpc]}},
                "body_format_override": {
                    "json_format": body,
                    "content_type": "application/json",
                },
            }
        )
    return {"mappers": mappers}


def _api_listener(settings: Settings, files: RunFiles, descriptors: bytes) -> Json:
    filters = [_health_check(), _grpc_web(), _transcoder(descriptors)]
    chain: Json = {"filters": [_http_manager("gateway", _routes(settings, descriptors), filters)]}
    if settings.tls.server() is not None:
        chain["transport_socket"] = _downstream_tls(files)
    return {
        "name": "gateway",
        "address": socket_address(settings.listen_address),
        "filter_chains": [chain],
    }


def _health_check() -> Json:
    return {
        "name": "envoy.filters.http.health_check",
        "typed_config": {
            "@type": f"{_TYPES}.filters.http.health_check.v3.HealthCheck",
            "pass_through_mode": False,
            "headers": [{"name": ":path", "string_match": {"exact": HEALTH_PATH}}],
        },
    }


def _grpc_web() -> Json:
    return {
        "name": "envoy.filters.http.grpc_web",
        "typed_config": {"@type": f"{_TYPES}.filters.http.grpc_web.v3.GrpcWeb"},
    }


def _transcoder(descriptors: bytes, *, print_empty: bool = False) -> Json:
    """The HTTP/JSON transcoder; ``print_empty`` prints empty fields too (``[]``, ``""``)."""
    return {
        "name": _TRANSCODER,
        "typed_config": {
            "@type": f"{_TYPES}.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder",
            "proto_descriptor_bin": base64.b64encode(descriptors).decode(),
            "services": list(SERVICES),
            # Only the google.api.http bindings, never /package.Service/Method as JSON.
            "auto_mapping": False,
            "convert_grpc_status": True,
            "print_options": {"add_whitespace": True, "always_print_primitive_fields": print_empty},
            "request_validation_options": {
                "reject_unknown_query_parameters": True,
                "reject_binding_body_field_collisions": True,
            },
        },
    }


def _api_route(match: Json) -> Json:
    return {
        "match": match,
        "route": {
            "cluster": "api",
            "timeout": REQUEST_TIMEOUT,
            "max_stream_duration": {"grpc_timeout_header_max": REQUEST_TIMEOUT},
        },
    }


def _routes(settings: Settings, descriptors: bytes) -> Json:
    # A JWKS is {"keys": []} when a team has no key (RFC 7517), not {}: that route's
    # transcoder prints empty fields (a JWK's fields are never empty).
    get = [{"name": ":method", "string_match": {"exact": "GET"}}]
    jwks = _api_route({"safe_regex": {"regex": JWKS_PATHS}, "headers": get})
    transcoder = _transcoder(descriptors, print_empty=True)
    jwks["typed_per_filter_config"] = {_TRANSCODER: transcoder["typed_config"]}
    routes: list[Json] = [jwks]
    if settings.openapi_file:
        routes.append(
            {
                "match": {"path": OPENAPI_PATH},
                "direct_response": {"status": 200, "body": {"filename": settings.openapi_file}},
                "response_headers_to_add": [
                    {"header": {"key": "content-type", "value": "application/yaml"}}
                ],
            }
        )
    # Transcoded and gRPC-web calls arrive here with their gRPC paths.
    routes.extend(_api_route({"prefix": f"/{service}/"}) for service in SERVICES)
    routes.append(
        {
            "match": {"prefix": "/"},
            "direct_response": {
                "status": 404,
                "body": {"inline_string": "no API method at this path"},
            },
        }
    )
    return {
        "name": "gateway",
        "max_direct_response_body_size_bytes": MAX_DIRECT_RESPONSE,
        "virtual_hosts": [{"name": "gateway", "domains": ["*"], "routes": routes}],
    }


def _downstream_tls(files: RunFiles) -> Json:
    return {
        "name": "envoy.transport_sockets.tls",
        "typed_config": {
            "@type": f"{_TYPES}.transport_sockets.tls.v3.DownstreamTlsContext",
            "common_tls_context": {
                "alpn_protocols": ["h2", "http/1.1"],
                "tls_certificate_sds_secret_configs": [
                    {
                        "name": "server",
                        "sds_config": {
                            "path_config_source": {"path": str(files.server_secret)},
                            "resource_api_version": "V3",
                        },
                    }
                ],
            },
        },
    }


def _api_cluster(settings: Settings) -> Json:
    cluster: Json = {
        "name": "api",
        # Every address of the name, re-resolved: a headless Service's pods, each balanced.
        "type": "STRICT_DNS",
        "dns_lookup_family": "V4_PREFERRED",
        "lb_policy": "ROUND_ROBIN",
        "connect_timeout": "5s",
        "typed_extension_protocol_options": {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": f"{_TYPES}.upstreams.http.v3.HttpProtocolOptions",
                "explicit_http_config": {"http2_protocol_options": {}},
            }
        },
        "load_assignment": {
            "cluster_name": "api",
            "endpoints": [
                {"lb_endpoints": [{"endpoint": {"address": socket_address(settings.api_target)}}]}
            ],
        },
        # The api's health service: a stopping api says NOT_SERVING and gets no new calls.
        "health_checks": [
            {
                "timeout": "2s",
                "interval": "5s",
                "no_traffic_interval": "5s",
                "unhealthy_threshold": 2,
                "healthy_threshold": 1,
                "grpc_health_check": {},
            }
        ],
    }
    client = settings.tls.client(Link.GRPC)
    if client is not None:
        cluster["transport_socket"] = _upstream_tls(settings.api_server_name, client)
    return cluster


def _upstream_tls(name: str, client: ClientTls) -> Json:
    try:
        ipaddress.ip_address(name)
        san, sni = "IP_ADDRESS", {}
    except ValueError:
        san, sni = "DNS", {"sni": name}
    return {
        "name": "envoy.transport_sockets.tls",
        "typed_config": {
            "@type": f"{_TYPES}.transport_sockets.tls.v3.UpstreamTlsContext",
            **sni,
            "common_tls_context": {
                "alpn_protocols": ["h2"],
                # The CA, and the api's name in its certificate, as every Duetime client checks.
                "validation_context": {
                    "trusted_ca": {"filename": client.ca_file},
                    "match_typed_subject_alt_names": [
                        {"san_type": san, "matcher": {"exact": name}}
                    ],
                },
            },
        },
    }


def _metrics_listener(address: str) -> Json:
    """Prometheus scrapes /metrics: Envoy's statistics, from its admin interface."""
    routes = {
        "virtual_hosts": [
            {
                "name": "metrics",
                "domains": ["*"],
                "routes": [
                    {
                        "match": {"path": "/metrics"},
                        "route": {"cluster": "admin", "prefix_rewrite": "/stats/prometheus"},
                    }
                ],
            }
        ]
    }
    return {
        "name": "metrics",
        "address": socket_address(address),
        "filter_chains": [{"filters": [_http_manager("metrics", routes, [])]}],
    }


def _admin_cluster(files: RunFiles) -> Json:
    return {
        "name": "admin",
        "type": "STATIC",
        "connect_timeout": "1s",
        "load_assignment": {
            "cluster_name": "admin",
            "endpoints": [
                {
                    "lb_endpoints": [
                        {"endpoint": {"address": {"pipe": {"path": str(files.admin_socket)}}}}
                    ]
                }
            ],
        },
    }
