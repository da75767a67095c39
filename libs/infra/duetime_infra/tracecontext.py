"""W3C trace context for a run: the trace starts where the run is made and travels with it.

A run's trace starts with a span where the run comes to exist (the scheduler's claim, the API's
trigger). The run stores that span's context (``stored_trace``), which holds its trace id; the
outbox row and the Kafka message carry it on, and every later span of the run (publish,
consume, the target call, the outcome report) continues that trace. That first span's ids are
the run's own (``run_trace_ids``, a hash of its id), so a run stores only the span's flags.

When tracing is off (no exporter, see ``duetime_infra.telemetry.tracing``) the OpenTelemetry API
is the no-op one: spans cost a function call and have no ids, so a run takes its own ids
without a span and still carries a valid traceparent. A run the sampler leaves out gets a real
span context with the sampled flag clear: valid, recorded nowhere.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace import INVALID_SPAN, Span, SpanContext, SpanKind, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import Attributes


class _Tracer(Tracer):
    """Duetime's tracer: OpenTelemetry's, except that with no provider installed a span made
    to be current (the worker's per-run spans) is not made at all: the no-op API would still
    build a span, a context and a context-variable token for each, on the hottest path of a
    herd. ``start_span`` always delegates: a run's trace needs a span's ids when there are
    any."""

    def __init__(self) -> None:
        self._tracer = trace.get_tracer("duetime")

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[trace.Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> Span:
        return self._tracer.start_span(
            name,
            context,
            kind,
            attributes,
            links,
            start_time,
            record_exception,
            set_status_on_exception,
        )

    def start_as_current_span(  # type: ignore[override]
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[trace.Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
        end_on_exit: bool = True,
    ) -> AbstractContextManager[Span]:
        if not tracing_active():
            return _NO_SPAN
        return self._tracer.start_as_current_span(
            name,
            context,
            kind,
            attributes,
            links,
            start_time,
            record_exception,
            set_status_on_exception,
            end_on_exit,
        )


# Entered any number of times, even at once: it holds no state.
_NO_SPAN = nullcontext(INVALID_SPAN)
TRACER: Tracer = _Tracer()
# Attribute names of Duetime's own spans.
RUN_ID = "duetime.run_id"
JOB_ID = "duetime.job_id"
ATTEMPT = "duetime.attempt"

# A context with no span in it: a span started in it begins a new trace.
_NEW_TRACE = Context()
# A ``traceparent`` field (not a carrier of whatever OTEL_PROPAGATORS names) is W3C's.
_W3C = TraceContextTextMapPropagator()

KafkaHeaders = Sequence[tuple[str, bytes | None]]


@dataclass(frozen=True)
class RunTrace:
    trace_id: str  # 32 hex digits
    traceparent: str


def run_trace_ids(run_id: uuid.UUID) -> bytes:
    """The trace id (16 bytes) and span id (8) a run's trace begins with: the first 24 bytes of
    the SHA-256 of its id, uniformly random as W3C and trace-id ratio samplers expect (a UUIDv7
    leads with its time). ``duetime_run_trace_id`` (schema 31) reads a run's trace id in SQL."""
    return hashlib.sha256(run_id.bytes).digest()[:24]


def _traceparent(ids: bytes, flags: int) -> str:
    h = ids.hex()
    return f"00-{h[:32]}-{h[32:]}-{flags:02x}"


def new_run_trace(run_id: uuid.UUID) -> RunTrace:
    """The run's own ids, no span: for a run made where no trace is wanted or tracing is off."""
    return _own_trace(run_trace_ids(run_id))


def _own_trace(ids: bytes) -> RunTrace:
    return RunTrace(ids[:16].hex(), _traceparent(ids, 1))


def continue_trace(trace_id: str) -> RunTrace:
    """A new span in the run's existing trace (a redrive, a retry); a new trace if it has none."""
    if len(trace_id) != 32:
        trace_id = secrets.token_hex(16)
    return RunTrace(trace_id, f"00-{trace_id}-{secrets.token_hex(8)}-01")


def trace_id_of(traceparent: str) -> str:
    """The trace id (32 hex digits) a W3C traceparent names, '' if it names none: a run's trace
    id is read from its traceparent, which holds it."""
    parts = traceparent.split("-")
    if len(parts) != 4 or len(parts[1]) != 32:
        return ""
    return parts[1]


def stored_trace(traceparent: str, run_id: uuid.UUID) -> tuple[bytes | None, str]:
    """A run's traceparent as its row stores it: ``(trace_context, traceparent)``. A version-00
    W3C traceparent is its flags alone (1 byte, schema 31) when it names the run's own ids
    (``run_trace_ids``), else its 25 bytes (trace id, parent id, flags; schema 28), with ''
    beside them; anything else (none: '') is kept as it is, with no bytes."""
    parts = traceparent.split("-")
    if len(parts) == 4 and parts[0] == "00" and list(map(len, parts[1:])) == [32, 16, 2]:
        try:
            stored = bytes.fromhex("".join(parts[1:]))
        except ValueError:
            stored = b""
        if stored.hex() == "".join(parts[1:]):  # lower-case hex only: fromhex skips spaces
            if stored[:24] == run_trace_ids(run_id):
                return stored[24:], ""
            return stored, ""
    return None, traceparent


def read_trace(trace_context: bytes | None, traceparent: str, run_id: uuid.UUID) -> str:
    """A run's traceparent from the two columns ``stored_trace`` wrote (a run made by an older
    build has its text and no bytes)."""
    if trace_context is None:
        return traceparent
    if len(trace_context) == 1:
        return _traceparent(run_trace_ids(run_id), trace_context[0])
    h = trace_context.hex()
    return f"00-{h[:32]}-{h[32:48]}-{h[48:]}"


def traceparent_of(context: SpanContext) -> str:
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


# The ids the next span started in this context takes (``RunIdGenerator``, installed with
# the tracer provider, clears them once it has): a run's first span is given the run's own.
PRESET_IDS: ContextVar[bytes | None] = ContextVar("duetime_preset_ids", default=None)


def start_run_span(
    name: str, run_id: uuid.UUID, *, start_time: int | None = None, tracer: Tracer = TRACER
) -> tuple[RunTrace, Span]:
    """Starts the span that begins a run's trace, with the run's own ids (``run_trace_ids``),
    linked to the current span if there is one (the request that made the run); the caller
    ends it once the run exists (a span never ended is never exported, which suits a run that
    was not inserted after all)."""
    current = trace.get_current_span().get_span_context()
    ids = run_trace_ids(run_id)
    token = PRESET_IDS.set(ids)
    try:
        span = tracer.start_span(
            name,
            context=_NEW_TRACE,
            kind=SpanKind.INTERNAL,
            start_time=start_time,
            links=[trace.Link(current)] if current.is_valid else (),
        )
    finally:
        PRESET_IDS.reset(token)
    context = span.get_span_context()
    if not context.is_valid:
        return _own_trace(ids), span
    return RunTrace(f"{context.trace_id:032x}", traceparent_of(context)), span


_installed = False


def tracing_active() -> bool:
    """Whether a real tracer provider is installed: callers skip per-item trace work if not."""
    global _installed
    if _installed:  # a global provider is set once and never unset
        return True
    # OpenTelemetry's global itself: get_tracer_provider() looks the environment up each time
    # none is set (for OTEL_PYTHON_TRACER_PROVIDER, which Duetime does not use: providers are
    # installed by setup_tracing), an encoding and a dict lookup per call, several per run.
    provider = getattr(trace, "_TRACER_PROVIDER", None)
    _installed = provider is not None and not isinstance(
        provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider
    )
    return _installed


def current_traceparent(default: str) -> str:
    """The current span's traceparent, or ``default`` when there is no valid span."""
    context = trace.get_current_span().get_span_context()
    return traceparent_of(context) if context.is_valid else default


def context_of(headers: Mapping[str, str]) -> Context:
    """The trace context carried by text headers such as an outbox row's."""
    return propagate.extract(headers)


class _KafkaHeaderGetter(Getter[KafkaHeaders]):
    def get(self, carrier: KafkaHeaders, key: str) -> list[str] | None:
        values = [v.decode(errors="replace") for k, v in carrier if k == key and v is not None]
        return values or None

    def keys(self, carrier: KafkaHeaders) -> list[str]:
        return [k for k, _ in carrier]


_KAFKA_GETTER = _KafkaHeaderGetter()


def context_of_kafka(headers: KafkaHeaders) -> Context:
    """The trace context carried by a Kafka record's headers."""
    return propagate.extract(headers, getter=_KAFKA_GETTER)


def trace_metadata() -> tuple[tuple[str, str], ...]:
    """gRPC metadata carrying the current trace context. The grpc instrumentation, when on,
    replaces it with its client span's context (same keys), so a call carries it once."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return tuple(carrier.items())


def context_of_traceparent(traceparent: str) -> Context | None:
    """The context a W3C ``traceparent`` names; None when it is empty or malformed."""
    if not traceparent:
        return None
    extracted = _W3C.extract({"traceparent": traceparent})
    return extracted if trace.get_current_span(extracted).get_span_context().is_valid else None


@contextmanager
def in_trace(traceparent: str) -> Iterator[None]:
    """Runs the block in the context ``traceparent`` names (nothing changes without one)."""
    extracted = context_of_traceparent(traceparent)
    if extracted is None:
        yield
        return
    token = otel_context.attach(extracted)
    try:
        yield
    finally:
        otel_context.detach(token)


def start_entry_span(
    name: str,
    traceparent: str,
    attributes: Mapping[str, str | int],
    tracer: Tracer = TRACER,
) -> Span | None:
    """A span for one entry of a batch call, in the trace of the run it is about: a child of the
    entry's ``traceparent`` (else of the current span), linked to the batch call's span. None
    when tracing is off: a herd's batch builds nothing per entry then. The caller ends it."""
    if not tracing_active():
        return None
    parent = context_of_traceparent(traceparent)
    current = trace.get_current_span().get_span_context()
    return tracer.start_span(
        name,
        context=parent,
        kind=SpanKind.INTERNAL,
        attributes=attributes,
        links=[trace.Link(current)] if parent is not None and current.is_valid else (),
    )


def rpc_traceparent(metadata: Iterable[tuple[str, str | bytes]] | None) -> str:
    """What a single RPC's entry span (``start_entry_span``) continues: nothing when the grpc
    instrumentation made a server span (the entry's span is its child), else the caller's
    ``traceparent`` from ``metadata``."""
    if not tracing_active() or trace.get_current_span().get_span_context().is_valid:
        return ""
    for key, value in metadata or ():
        if key == "traceparent":
            return value.decode(errors="replace") if isinstance(value, bytes) else value
    return ""


@contextmanager
def rpc_span(
    name: str, metadata: Iterable[tuple[str, str | bytes]] | None, tracer: Tracer = TRACER
) -> Iterator[Span]:
    """A span for handling an RPC: a child of the server span when the grpc instrumentation
    made one, else of the context the caller sent in ``metadata``. With tracing off there is
    no span to make (and no metadata to parse): the block gets the invalid span."""
    if not tracing_active():
        yield INVALID_SPAN
        return
    parent: Context | None = None
    if not trace.get_current_span().get_span_context().is_valid:
        parent = propagate.extract(
            {
                k: v.decode(errors="replace") if isinstance(v, bytes) else v
                for k, v in metadata or ()
            }
        )
    with tracer.start_as_current_span(name, context=parent) as span:
        yield span
