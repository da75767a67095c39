"""Traces: one TracerProvider per service, set up from the standard ``OTEL_*`` variables.

``setup_tracing(service_name)`` is the first thing a service's ``main()`` does. It reads which
exporters to use (``OTEL_TRACES_EXPORTER``: ``otlp``, ``console``, ``none``, or a list) and
leaves everything else to the SDK and the exporters, which read their own variables: the
sampler (``OTEL_TRACES_SAMPLER``), the batch processor (``OTEL_BSP_*``), the OTLP endpoint,
headers, timeout and compression (``OTEL_EXPORTER_OTLP_*``), resource attributes and
``OTEL_SERVICE_NAME`` (which defaults to the service's name here). Context travels as W3C
``traceparent``, the SDK's default propagator (``OTEL_PROPAGATORS`` can change it).

With no exporter configured nothing is installed: the OpenTelemetry API stays the no-op one, so
spans cost a function call, and runs still get a valid trace context of their own (see
``duetime_infra.tracecontext``). ``OTEL_TRACES_EXPORTER`` unset means ``otlp`` when an OTLP
endpoint is set and ``none`` otherwise, so a service never tries to reach a collector nobody
configured. Invalid values are logged and ignored, as OpenTelemetry SDKs do: a tracing mistake
never keeps a scheduler from starting.

With an exporter, grpc.aio servers and clients, asyncpg and aiokafka are instrumented, except
those named in ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS`` (``grpc_aio_server``,
``grpc_aio_client``, ``asyncpg``, ``aiokafka``; ``*`` for all). Spans still buffered are
exported when the process exits (the provider shuts down at exit, after a SIGTERM too).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

from duetime_infra.tracecontext import PRESET_IDS

log = logging.getLogger(__name__)

# Names as the OpenTelemetry distributions use them; "otlp" means the protocol chosen by
# OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL, of which this build ships gRPC only.
_OTLP = "otlp"
_OTLP_BY_PROTOCOL = {"grpc": "otlp_proto_grpc"}
_OTLP_ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_EXPORTER_GROUP = "opentelemetry_traces_exporter"
_INSTRUMENTOR_GROUP = "opentelemetry_instrumentor"
ALL_INSTRUMENTATIONS = ("grpc_aio_server", "grpc_aio_client", "asyncpg", "aiokafka")


@dataclass(frozen=True)
class TracingSettings:
    # Entry-point names of the span exporters; empty: tracing is off.
    exporters: tuple[str, ...]
    # Instrumentations to install, from ALL_INSTRUMENTATIONS.
    instrumentations: tuple[str, ...]
    # The resource's service.name.
    service_name: str


def _exporter_names(env: Mapping[str, str]) -> tuple[str, ...]:
    raw = env.get("OTEL_TRACES_EXPORTER")
    if raw is None:
        raw = _OTLP if any(env.get(name) for name in _OTLP_ENDPOINTS) else "none"
    names: list[str] = []
    for name in (n.strip() for n in raw.split(",")):
        if not name or name == "none":
            continue
        if name == _OTLP:
            protocol = (
                env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
                or "grpc"
            ).strip()
            if protocol not in _OTLP_BY_PROTOCOL:
                log.error(
                    "OTLP protocol %r is not available (only grpc); traces not exported",
                    protocol,
                    extra={"action": "tracing_misconfigured"},
                )
                continue
            name = _OTLP_BY_PROTOCOL[protocol]
        if name not in names:
            names.append(name)
    return tuple(names)


def _instrumentations(env: Mapping[str, str]) -> tuple[str, ...]:
    disabled = {n.strip() for n in env.get("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "").split(",")}
    if "*" in disabled:
        return ()
    return tuple(n for n in ALL_INSTRUMENTATIONS if n not in disabled)


def _service_name(env: Mapping[str, str], default: str) -> str:
    # OTEL_SERVICE_NAME, then service.name in OTEL_RESOURCE_ATTRIBUTES, then the default.
    if env.get("OTEL_SERVICE_NAME", "").strip():
        return env["OTEL_SERVICE_NAME"].strip()
    for item in env.get("OTEL_RESOURCE_ATTRIBUTES", "").split(","):
        key, _, value = item.partition("=")
        if key.strip() == SERVICE_NAME and value.strip():
            return value.strip()
    return default


def tracing_settings(default_service_name: str, env: Mapping[str, str]) -> TracingSettings:
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return TracingSettings((), (), default_service_name)
    return TracingSettings(
        _exporter_names(env), _instrumentations(env), _service_name(env, default_service_name)
    )


def _load_exporter(name: str) -> SpanExporter | None:
    found = entry_points(group=_EXPORTER_GROUP, name=name)
    if not found:
        log.error(
            "no span exporter named %r (OTEL_TRACES_EXPORTER); ignored",
            name,
            extra={"action": "tracing_misconfigured"},
        )
        return None
    factory: Callable[[], SpanExporter] = next(iter(found)).load()
    # The exporter reads its own OTEL_EXPORTER_* variables.
    return factory()


class RunIdGenerator(RandomIdGenerator):
    """Random ids, except for a span started with ``tracecontext.PRESET_IDS`` set: a run's
    first span, which takes the run's own ids so that its row need not store them."""

    def generate_trace_id(self) -> int:
        preset = PRESET_IDS.get()
        return int.from_bytes(preset[:16]) if preset else super().generate_trace_id()

    def generate_span_id(self) -> int:
        preset = PRESET_IDS.get()
        if not preset:
            return super().generate_span_id()
        PRESET_IDS.set(None)  # one span's: start_run_span restores the context's own after
        return int.from_bytes(preset[16:])


def build_provider(settings: TracingSettings) -> TracerProvider | None:
    """A provider exporting through every configured exporter, or None when none is usable.

    The SDK reads the sampler and batch settings from the process environment itself."""
    exporters = [e for e in map(_load_exporter, settings.exporters) if e is not None]
    if not exporters:
        return None
    # The other OTEL_RESOURCE_ATTRIBUTES come from the SDK's own detector.
    resource = Resource.create({SERVICE_NAME: settings.service_name})
    # shutdown_on_exit: the provider flushes and stops its processors at interpreter exit.
    provider = TracerProvider(
        resource=resource, shutdown_on_exit=True, id_generator=RunIdGenerator()
    )
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def _instrument(name: str, provider: TracerProvider) -> None:
    # Found by entry point, as OpenTelemetry's auto-instrumentation finds them.
    (found,) = entry_points(group=_INSTRUMENTOR_GROUP, name=name)
    found.load()().instrument(tracer_provider=provider)


def setup_tracing(
    default_service_name: str, environ: Mapping[str, str] | None = None
) -> TracerProvider | None:
    """Installs the global tracer provider and the instrumentations; returns the provider, or
    None when tracing is off. Call it once, before any server, channel, pool or Kafka client
    is created."""
    env = os.environ if environ is None else environ
    settings = tracing_settings(default_service_name, env)
    provider = build_provider(settings)
    if provider is None:
        return None
    trace.set_tracer_provider(provider)
    for name in settings.instrumentations:
        _instrument(name, provider)
    log.info(
        "tracing on",
        extra={
            "action": "tracing_configured",
            "service_name": settings.service_name,
            "exporters": list(settings.exporters),
            "instrumentations": list(settings.instrumentations),
        },
    )
    return provider
