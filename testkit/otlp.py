"""A real OTLP/gRPC trace receiver for tests: the collector's TraceService on 127.0.0.1, keeping
every span it is sent together with its resource's ``service.name``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from grpc import aio
from opentelemetry.proto.collector.trace.v1 import (
    trace_service_pb2,
    trace_service_pb2_grpc,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue


@dataclass(frozen=True)
class ReceivedSpan:
    service: str  # the resource's service.name
    name: str
    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    parent_span_id: str  # "" for a trace's root
    kind: int  # opentelemetry.proto.trace.v1 Span.SpanKind
    attributes: dict[str, object]
    status_code: int  # Status.StatusCode: 0 unset, 1 ok, 2 error
    links: tuple[tuple[str, str], ...]  # (trace id, span id) of each linked span

    def is_context_of(self, traceparent: str) -> bool:
        """Whether a W3C ``traceparent`` names this span, sampled (its other flag bits vary:
        the SDK also sets the random-trace-id bit of trace context level 2)."""
        version, trace_id, span_id, flags = traceparent.split("-")
        sampled = bool(int(flags, 16) & 1)
        return (version, trace_id, span_id, sampled) == ("00", self.trace_id, self.span_id, True)


def _value(value: AnyValue) -> object:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind in ("string_value", "int_value", "bool_value") else value


def _attributes(pairs: Any) -> dict[str, object]:
    out: dict[str, object] = {}
    pair: KeyValue
    for pair in pairs:
        out[pair.key] = _value(pair.value)
    return out


@dataclass
class TraceReceiver(trace_service_pb2_grpc.TraceServiceServicer):
    endpoint: str = ""
    spans: list[ReceivedSpan] = field(default_factory=list)
    exports: int = 0

    async def Export(  # noqa: N802 (the collector contract's name)
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: Any
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        self.exports += 1
        for resource_spans in request.resource_spans:
            service = str(_attributes(resource_spans.resource.attributes).get("service.name", ""))
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    self.spans.append(
                        ReceivedSpan(
                            service=service,
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                            kind=span.kind,
                            attributes=_attributes(span.attributes),
                            status_code=span.status.code,
                            links=tuple((k.trace_id.hex(), k.span_id.hex()) for k in span.links),
                        )
                    )
        return trace_service_pb2.ExportTraceServiceResponse()

    def trace(self, trace_id: str) -> list[ReceivedSpan]:
        return [s for s in self.spans if s.trace_id == trace_id]

    def env(self, schedule_delay_ms: int = 100) -> dict[str, str]:
        """The variables that make a service export its spans here, batched for at most
        ``schedule_delay_ms`` before each export."""
        return {
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_ENDPOINT": self.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": str(schedule_delay_ms),
        }


@asynccontextmanager
async def otlp_receiver() -> AsyncIterator[TraceReceiver]:
    receiver = TraceReceiver()
    server = aio.server()
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(receiver, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    receiver.endpoint = f"http://127.0.0.1:{port}"
    try:
        yield receiver
    finally:
        await server.stop(0)
