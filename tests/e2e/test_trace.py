"""One OpenTelemetry trace follows a run through the four services, run as processes exporting
to a real OTLP receiver: the scheduler's claim starts it (its context is the traceparent stored
on the run), the relay's publish, the worker's consume and target call (whose context the target
receives), and the scheduler's handling of the worker's start and report (sent in batches, each
entry carrying its run's context). A triggered run's trace starts in the API instead."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from duetime.jobs.v1 import job_service_pb2, run_pb2
from duetime_infra.tracecontext import read_trace
from testkit.http_target import Behaviour, Call, HttpTarget, http_target
from testkit.otlp import ReceivedSpan, TraceReceiver, otlp_receiver
from testkit.polling import eventually
from testkit.processes import service
from testkit.system import http_job, running_system
from testkit.tls import service_channel

pytestmark = pytest.mark.timeout(90)

API, SCHEDULER = "duetime-api", "duetime-scheduler"
RELAY, WORKER = "duetime-relay", "duetime-worker"
WORKER_SERVICE = "/duetime.worker.v1.WorkerService"


@pytest.fixture
async def receiver() -> AsyncIterator[TraceReceiver]:
    async with otlp_receiver() as started:
        yield started


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with http_target() as server:
        yield server


def named(spans: list[ReceivedSpan], service: str, name: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.service == service and s.name == name]


def parent_of(spans: list[ReceivedSpan], span: ReceivedSpan) -> ReceivedSpan:
    (parent,) = [s for s in spans if s.span_id == span.parent_span_id]
    return parent


def check_run_trace(
    receiver: TraceReceiver, spans: list[ReceivedSpan], root: ReceivedSpan, target_saw: Call
) -> None:
    """The run's trace from its root on: publish, consume, the target call and the scheduler's
    handling of the run's start and report, linked as each hop should link them."""
    # The relay publishes in it, as a child of the stored context.
    (publish,) = named(spans, RELAY, "publish run")
    assert publish.parent_span_id == root.span_id

    # The worker consumes in the context the message carried: the publish span, or the
    # aiokafka instrumentation's send span under it.
    (consume,) = named(spans, WORKER, "consume run")
    carried = parent_of(spans, consume)
    assert carried.service == RELAY
    assert publish in (carried, parent_of(spans, carried))

    # The target call is the consume span's child, and the target got its context.
    (call,) = named(spans, WORKER, "call target")
    assert call.parent_span_id == consume.span_id
    assert call.is_context_of(target_saw.headers["traceparent"])

    # StartAttempt and CompleteAttempt go in batches (StartAttempts, CompleteAttempts): the
    # scheduler's span for the run's entry is a child of the consume span, whose context the
    # entry carried, and is linked to the scheduler's span of the batch call, which belongs to
    # no run's trace.
    for rpc, name in (("StartAttempts", "start attempt"), ("CompleteAttempts", "complete attempt")):
        handled = named(spans, SCHEDULER, name)
        assert handled, name
        for span in handled:
            assert span.parent_span_id == consume.span_id
            ((linked_trace, linked_span),) = span.links
            (batch,) = [s for s in receiver.trace(linked_trace) if s.span_id == linked_span]
            assert (batch.service, batch.name) == (SCHEDULER, f"{WORKER_SERVICE}/{rpc}")
    starts = named(spans, SCHEDULER, "start attempt")
    assert starts[-1].attributes["duetime.decision"] == "STARTED"
    (completed,) = named(spans, SCHEDULER, "complete attempt")
    assert completed.attributes["duetime.run_state"] == "SUCCEEDED"

    # One connected trace: the root is its only root, every other span's parent is in it.
    ids = {s.span_id for s in spans}
    assert [s for s in spans if s.parent_span_id not in ids] == [root]


async def test_one_trace_follows_a_run_through_the_four_services(
    db_dsn: str, receiver: TraceReceiver, target: HttpTarget
) -> None:
    began = time.monotonic()
    async with running_system(db_dsn, common_env=receiver.env()) as system:
        api = system.api
        job = await api.create(
            http_job(
                "traced",
                target.on("/traced", Behaviour()),
                at=datetime.now(UTC) + timedelta(seconds=1),
            )
        )
        print(f"system up in {time.monotonic() - began:.1f} s")

        async def succeeded(count: int) -> bool:
            states = [r.state for r in await api.runs(job)]
            return states == [run_pb2.RUN_STATE_SUCCEEDED] * count

        took = await eventually(lambda: succeeded(1), 30, "the scheduled run SUCCEEDED")
        print(f"scheduled run succeeded {took:.1f} s after creation")
        # A triggered run too; the same request again returns the same run.
        trigger = job_service_pb2.TriggerJobRequest(name=job.name, request_id="trace-trigger")
        triggered = (await api.stub.TriggerJob(trigger, metadata=api.metadata)).run
        again = (await api.stub.TriggerJob(trigger, metadata=api.metadata)).run
        assert again.run_id == triggered.run_id
        await eventually(lambda: succeeded(2), 30, "the triggered run SUCCEEDED")
        runs = await api.runs(job)
        (scheduled,) = [r for r in runs if r.run_id != triggered.run_id]
        for run in runs:
            assert len(run.trace_id) == 32

        async def complete() -> bool:
            # The reports' spans, and the batch call's span each links to (ended just after).
            reports = [
                s
                for r in runs
                for s in named(receiver.trace(r.trace_id), SCHEDULER, "complete attempt")
            ]
            received = {s.span_id for s in receiver.spans}
            return len({s.trace_id for s in reports}) == len(runs) and all(
                link[1] in received for s in reports for link in s.links
            )

        took = await eventually(complete, 15, "the scheduler's CompleteAttempt spans arrived")
        print(f"the traces' last spans arrived {took:.1f} s later")
        tokens = (system.team_token, system.worker_token)
    calls = {c.headers["Idempotency-Key"]: c for c in target.calls_to("/traced")}
    assert len(calls) == 2

    # The scheduled run's trace starts with the claim, with the run's own ids: the run stores
    # the span's flags alone.
    spans = receiver.trace(scheduled.trace_id)
    (claim,) = named(spans, SCHEDULER, "claim run")
    assert claim.parent_span_id == ""
    assert claim.attributes["duetime.run_id"] == scheduled.run_id
    conn = await asyncpg.connect(db_dsn)
    try:
        row = await conn.fetchrow(
            "SELECT trace_context, traceparent FROM runs WHERE run_id = $1",
            uuid.UUID(scheduled.run_id),
        )
    finally:
        await conn.close()
    assert row is not None
    assert len(row["trace_context"]) == 1  # sampled, and its id random (W3C level 2)
    assert row["trace_context"][0] == 0x03
    assert claim.is_context_of(
        read_trace(row["trace_context"], row["traceparent"], uuid.UUID(scheduled.run_id))
    )
    check_run_trace(receiver, spans, claim, calls[scheduled.idempotency_key])

    # The triggered run's starts in the API, linked to the TriggerJob call that made it.
    spans = receiver.trace(triggered.trace_id)
    (made,) = named(spans, API, "trigger run")
    assert made.attributes["duetime.run_id"] == triggered.run_id
    ((linked_trace, linked_span),) = made.links
    (request,) = [s for s in receiver.trace(linked_trace) if s.span_id == linked_span]
    assert (request.service, request.name) == (API, "/duetime.jobs.v1.JobService/TriggerJob")
    check_run_trace(receiver, spans, made, calls[triggered.idempotency_key])

    # Credentials never reach a trace.
    leaked = [
        s for s in receiver.spans for v in s.attributes.values() if any(t in str(v) for t in tokens)
    ]
    assert leaked == []


async def test_a_terminated_service_exports_the_spans_it_still_held(
    db_dsn: str, receiver: TraceReceiver
) -> None:
    # A ten-minute batch delay: the spans leave only when the service shuts down.
    env = {"DUETIME_PG_DSN": db_dsn, "DUETIME_API_ADDRESS": "127.0.0.1:0", **receiver.env(600_000)}
    async with service("duetime_api", env, "DUETIME_API_PORT") as api:
        async with service_channel(api.address) as channel:
            health: Any = health_pb2_grpc.HealthStub(channel)  # the stubs do not declare Check
            answer = await health.Check(health_pb2.HealthCheckRequest())
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
        assert receiver.spans == []
    # The service has exited (SIGTERM); its spans were flushed on the way out.
    assert api.process.returncode == 0
    served = [s for s in receiver.spans if s.name == "/grpc.health.v1.Health/Check"]
    assert [s.service for s in served] == ["duetime-api"]
