"""Tracing setup from the OTEL_* variables, and the span that starts a run's trace.

The global provider and the instrumentations are process-wide, so ``setup_tracing`` itself runs
in a child process; a real OTLP receiver in this process shows what it exported.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import uuid
from collections.abc import Mapping

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, Sampler
from opentelemetry.trace import INVALID_SPAN

from duetime_core.runkey import new_run_id
from duetime_infra.telemetry.tracing import (
    ALL_INSTRUMENTATIONS,
    RunIdGenerator,
    TracingSettings,
    build_provider,
    tracing_settings,
)
from duetime_infra.tracecontext import (
    PRESET_IDS,
    TRACER,
    new_run_trace,
    read_trace,
    run_trace_ids,
    start_run_span,
    stored_trace,
    trace_id_of,
    tracing_active,
)
from testkit.otlp import otlp_receiver

TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
ENDPOINT = "http://127.0.0.1:4317"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, TracingSettings((), ALL_INSTRUMENTATIONS, "svc")),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT},
            TracingSettings(("otlp_proto_grpc",), ALL_INSTRUMENTATIONS, "svc"),
        ),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ENDPOINT},
            TracingSettings(("otlp_proto_grpc",), ALL_INSTRUMENTATIONS, "svc"),
        ),
        (
            {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT},
            TracingSettings((), ALL_INSTRUMENTATIONS, "svc"),
        ),
        (
            {"OTEL_TRACES_EXPORTER": " console , otlp "},
            TracingSettings(("console", "otlp_proto_grpc"), ALL_INSTRUMENTATIONS, "svc"),
        ),
        # Only the gRPC flavour of OTLP is installed: http/protobuf is refused, not guessed.
        (
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
            TracingSettings((), ALL_INSTRUMENTATIONS, "svc"),
        ),
        (
            {"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"},
            TracingSettings((), (), "svc"),
        ),
        (
            {"OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "asyncpg, grpc_aio_client"},
            TracingSettings((), ("grpc_aio_server", "aiokafka"), "svc"),
        ),
        ({"OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "*"}, TracingSettings((), (), "svc")),
        ({"OTEL_SERVICE_NAME": "blue"}, TracingSettings((), ALL_INSTRUMENTATIONS, "blue")),
        (
            {"OTEL_RESOURCE_ATTRIBUTES": "team=x,service.name=green"},
            TracingSettings((), ALL_INSTRUMENTATIONS, "green"),
        ),
        (
            {"OTEL_RESOURCE_ATTRIBUTES": "service.name=green", "OTEL_SERVICE_NAME": "blue"},
            TracingSettings((), ALL_INSTRUMENTATIONS, "blue"),
        ),
    ],
)
def test_settings_follow_the_standard_variables(
    env: dict[str, str], expected: TracingSettings
) -> None:
    assert tracing_settings("svc", env) == expected


def test_no_usable_exporter_builds_no_provider() -> None:
    assert build_provider(tracing_settings("svc", {})) is None
    assert build_provider(TracingSettings(("no_such_exporter",), (), "svc")) is None


def _local_tracer(
    sampler: Sampler | None = None, *, run_ids: bool = True
) -> tuple[trace.Tracer, InMemorySpanExporter]:
    """A tracer of a provider as ``build_provider`` makes it (with ``run_ids`` false, the
    SDK's own id generator instead of Duetime's), exporting to memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        sampler=sampler, id_generator=RunIdGenerator() if run_ids else RandomIdGenerator()
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("test"), exporter


def test_a_run_trace_is_the_context_of_the_span_that_starts_it() -> None:
    tracer, exporter = _local_tracer()
    run_id = new_run_id()
    run, span = start_run_span("claim run", run_id, tracer=tracer)
    assert exporter.get_finished_spans() == ()  # exported only once the caller ends it
    span.end()
    (exported,) = exporter.get_finished_spans()
    assert exported.parent is None
    context = exported.context
    assert context is not None
    assert run.trace_id == f"{context.trace_id:032x}"
    match = TRACEPARENT.match(run.traceparent)
    assert match is not None
    assert match.group(1, 2) == (run.trace_id, f"{context.span_id:016x}")
    assert int(match[3], 16) & 1  # sampled
    # Its ids are the run's own, so the run's row keeps its flags alone.
    assert match[1] + match[2] == run_trace_ids(run_id).hex()
    assert stored_trace(run.traceparent, run_id) == (bytes([int(match[3], 16)]), "")
    assert read_trace(*stored_trace(run.traceparent, run_id), run_id) == run.traceparent
    # A span the next one starts is its child, with an id of its own.
    with trace.use_span(span):
        child = tracer.start_span("publish run")
    assert child.get_span_context().trace_id == context.trace_id
    assert child.get_span_context().span_id != context.span_id


def test_the_preset_ids_are_one_spans() -> None:
    """A span started while the run's is being made (by a processor, say) gets ids of its own."""
    generator = RunIdGenerator()
    ids = run_trace_ids(new_run_id())
    token = PRESET_IDS.set(ids)
    try:
        assert generator.generate_trace_id() == int.from_bytes(ids[:16])
        assert generator.generate_span_id() == int.from_bytes(ids[16:])
        assert generator.generate_trace_id() != int.from_bytes(ids[:16])
        assert generator.generate_span_id() != int.from_bytes(ids[16:])
    finally:
        PRESET_IDS.reset(token)
    assert PRESET_IDS.get() is None


def test_a_provider_that_makes_its_own_ids_still_gives_a_run_its_trace() -> None:
    """A provider without Duetime's id generator: the run keeps the span's 25 bytes."""
    tracer, exporter = _local_tracer(run_ids=False)
    run_id = new_run_id()
    run, span = start_run_span("claim run", run_id, tracer=tracer)
    span.end()
    (exported,) = exporter.get_finished_spans()
    assert exported.context is not None
    assert run.trace_id == f"{exported.context.trace_id:032x}" != run_trace_ids(run_id)[:16].hex()
    stored, text = stored_trace(run.traceparent, run_id)
    assert stored is not None
    assert (len(stored), text) == (25, "")
    assert read_trace(stored, text, run_id) == run.traceparent


def test_a_run_trace_is_new_and_linked_to_the_request_that_made_it() -> None:
    tracer, exporter = _local_tracer()
    with tracer.start_as_current_span("TriggerJob") as request:
        run, span = start_run_span("trigger run", new_run_id(), tracer=tracer)
        span.end()
    made = next(s for s in exporter.get_finished_spans() if s.name == "trigger run")
    assert made.parent is None
    assert run.trace_id != f"{request.get_span_context().trace_id:032x}"
    assert [link.context for link in made.links] == [request.get_span_context()]


def test_a_sampled_out_run_still_has_a_valid_traceparent() -> None:
    tracer, exporter = _local_tracer(sampler=ALWAYS_OFF)
    run_id = new_run_id()
    run, span = start_run_span("claim run", run_id, tracer=tracer)
    span.end()
    assert exporter.get_finished_spans() == ()
    match = TRACEPARENT.match(run.traceparent)
    assert match is not None
    assert match[1] == run.trace_id != "0" * 32
    assert match[2] != "0" * 16
    assert not int(match[3], 16) & 1  # not sampled
    assert stored_trace(run.traceparent, run_id) == (bytes([int(match[3], 16)]), "")
    assert read_trace(*stored_trace(run.traceparent, run_id), run_id) == run.traceparent


def test_with_tracing_off_a_run_gets_its_own_ids() -> None:
    ids = [new_run_id(), new_run_id()]
    runs = [start_run_span("claim run", i, tracer=trace.NoOpTracer()) for i in ids]
    for run_id, (run, span) in zip(ids, runs, strict=True):
        assert not span.is_recording()
        assert run == new_run_trace(run_id)
        match = TRACEPARENT.match(run.traceparent)
        assert match is not None
        assert match[1] == run.trace_id != "0" * 32
        assert match[1] + match[2] == run_trace_ids(run_id).hex()
        assert stored_trace(run.traceparent, run_id) == (b"\x01", "")
    assert runs[0][0].trace_id != runs[1][0].trace_id


def test_a_runs_own_ids_are_uniform_though_its_id_leads_with_its_time() -> None:
    """Ratio samplers read a trace id's low 64 bits: a UUIDv7's are not uniform."""
    low = [int.from_bytes(run_trace_ids(new_run_id())[8:16]) for _ in range(2000)]
    below_half = sum(v < 1 << 63 for v in low)
    assert 850 < below_half < 1150
    assert run_trace_ids(uuid.UUID(int=1)) != run_trace_ids(uuid.UUID(int=2))


SCRIPT = """
from opentelemetry import trace
from duetime_infra.telemetry.tracing import setup_tracing
from duetime_core.runkey import new_run_id
from duetime_infra.tracecontext import TRACER, run_trace_ids, start_run_span, tracing_active
before = tracing_active()  # asked before the provider is installed, as a module may
provider = setup_tracing("duetime-test")
run_id = new_run_id()
run, span = start_run_span("claim run", run_id)
span.end()
# Current spans (the worker's consume and target call): nested when tracing is on.
with TRACER.start_as_current_span("consume run") as outer:
    with TRACER.start_as_current_span("call target") as inner:
        nested = (
            trace.get_current_span() is inner
            and inner.is_recording()
            and inner.parent is not None
            and inner.parent.span_id == outer.get_span_context().span_id
        )
own = run.trace_id == run_trace_ids(run_id)[:16].hex()
print(provider is not None, tracing_active(), run.trace_id, before, nested, own)
"""


async def _run_setup(env: Mapping[str, str]) -> tuple[str, str]:
    """Runs SCRIPT with only ``env`` of the OTEL_* variables; returns its stdout and stderr."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        SCRIPT,
        env={**clean, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    return out.decode(), err.decode()


async def test_setup_without_an_exporter_exports_nothing_and_still_traces_runs() -> None:
    async with otlp_receiver() as receiver:
        for env in ({}, {**receiver.env(), "OTEL_TRACES_EXPORTER": "none"}):
            out, err = await _run_setup(env)
            installed, active, trace_id, before, nested, own = out.split()
            assert (installed, active, before, nested) == ("False", "False", "False", "False")
            assert own == "True"
            assert re.fullmatch("[0-9a-f]{32}", trace_id)
            assert err == ""
        # The process has exited, and a configured exporter flushes before that (next test).
        assert receiver.spans == []
        assert receiver.exports == 0


async def test_setup_with_otlp_exports_at_exit_under_the_service_name() -> None:
    async with otlp_receiver() as receiver:
        # A ten-minute batch delay: only the flush at exit can have sent the span.
        out, _ = await _run_setup(receiver.env(schedule_delay_ms=600_000))
        installed, active, trace_id, before, nested, own = out.split()
        assert (installed, active, before, nested) == ("True", "True", "False", "True")
        assert own == "True"  # the installed provider gives a run's first span the run's ids
        (span,) = receiver.trace(trace_id)
        assert (span.service, span.name, span.parent_span_id) == ("duetime-test", "claim run", "")

        out, _ = await _run_setup({**receiver.env(), "OTEL_SERVICE_NAME": "renamed"})
        (span,) = receiver.trace(out.split()[2])
        assert span.service == "renamed"


def test_with_tracing_off_a_current_span_is_not_made() -> None:
    assert not tracing_active()  # no provider in the test process
    with TRACER.start_as_current_span("consume run") as outer:
        assert outer is INVALID_SPAN
        with TRACER.start_as_current_span("call target") as inner:
            assert inner is INVALID_SPAN
            # Nothing was made current: the context is the one the caller had.
            assert otel_context.get_current() == {}


def test_trace_id_of_a_traceparent() -> None:
    run = new_run_trace(new_run_id())
    assert trace_id_of(run.traceparent) == run.trace_id
    assert trace_id_of("") == ""
    assert trace_id_of("00-abc-def-01") == ""


def test_a_run_stores_its_traceparent_as_25_bytes_and_reads_it_back() -> None:
    """A traceparent not of the run's own ids (a run made before schema 31, or under a
    provider without Duetime's id generator)."""
    run_id = new_run_id()
    run = new_run_trace(new_run_id())
    stored, text = stored_trace(run.traceparent, run_id)
    assert stored is not None
    assert (len(stored), text) == (25, "")
    assert stored[:16].hex() == run.trace_id
    assert read_trace(stored, text, run_id) == run.traceparent
    sampled_out = f"00-{run.trace_id}-{'ab' * 8}-00"
    assert read_trace(*stored_trace(sampled_out, run_id), run_id) == sampled_out
    # What is not a version-00 traceparent is kept as it is, as a run of an older build was.
    for other in (
        "",
        "01-abc-def-01",
        f"00-{'zz' * 16}-{'ab' * 8}-01",
        f"00-{' 1' * 16}-{'ab' * 8}-01",
        f"00-{'AB' * 16}-{'ab' * 8}-01",
    ):
        assert stored_trace(other, run_id) == (None, other)
        assert read_trace(None, other, run_id) == other
