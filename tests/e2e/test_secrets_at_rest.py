"""Secrets at rest, end to end: a job with secret headers (its first call failing, so errors and
a retry go through the records too) and a container job with a secret env value run to success
through the four services as processes, tracing to a real OTLP receiver and serving metrics.
Afterwards no secret value is readable anywhere Duetime keeps or emits data: any column of any
table of PostgreSQL (as text), any Kafka record the run produced (key, value, headers), any
line the services printed, any span they exported, any metric they serve. The target still got
the real values."""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from duetime.jobs.v1 import job_pb2, run_pb2
from duetime_infra.kafka.topics import DEAD_LETTER_TOPIC, DISPATCH_TOPICS
from testkit.http_target import Behaviour, HttpTarget, http_target
from testkit.kafka import end_offsets, read_between, shared_bootstrap
from testkit.metrics import metrics_port, scrape
from testkit.otlp import TraceReceiver, otlp_receiver
from testkit.podman import task_image
from testkit.polling import eventually
from testkit.system import System, http_job, running_system

pytestmark = pytest.mark.timeout(120)

HEADER_SECRET = f"hdr-{uuid.uuid4().hex}"
KEY_SECRET = f"key-{uuid.uuid4().hex}"
ENV_SECRET = f"env-{uuid.uuid4().hex}"
SECRETS = (HEADER_SECRET, KEY_SECRET, ENV_SECRET)
PODMAN_WORKERS = {
    "DUETIME_CONTAINER_LAUNCHER": "podman",
    "DUETIME_CONTAINER_IMAGES": "localhost/duetime-test-*",
    "DUETIME_PODMAN_NETWORK": "host",
    "DUETIME_PODMAN_STOP_SECONDS": "1",
}
TOPICS = [*DISPATCH_TOPICS.values(), DEAD_LETTER_TOPIC]


@pytest.fixture
async def receiver() -> AsyncIterator[TraceReceiver]:
    async with otlp_receiver() as started:
        yield started


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with http_target() as server:
        yield server


def leaked(text: str | bytes) -> list[str]:
    """The secrets ``text`` shows, in clear or base64."""
    data = text.encode() if isinstance(text, str) else text
    found = []
    for secret in SECRETS:
        if secret.encode() in data or base64.b64encode(secret.encode()) in data:
            found.append(secret)
    return found


def jobs(target: HttpTarget, image: str) -> tuple[job_pb2.Job, job_pb2.Job]:
    soon = datetime.now(UTC) + timedelta(seconds=1)
    headers = http_job("headers", target.on("/h", Behaviour(fail_first=1)), at=soon)
    headers.target.http.headers["Authorization"] = f"Bearer {HEADER_SECRET}"
    headers.target.http.headers["X-Api-Key"] = KEY_SECRET
    container = http_job("env", "http://unused.invalid/", at=soon)
    script = f"env > /tmp/env && wget -q -O /dev/null --post-file /tmp/env {target.url('/env')}"
    container.target.container.CopyFrom(
        job_pb2.ContainerTarget(image=image, command=["sh", "-c", script])
    )
    container.target.container.env["API_TOKEN"] = ENV_SECRET
    return headers, container


def _succeeded(system: System, job: job_pb2.Job) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        runs = await system.api.runs(job)
        return len(runs) == 1 and runs[0].state == run_pb2.RUN_STATE_SUCCEEDED

    return check


async def database_leaks(dsn: str) -> list[str]:
    """Every table (partitions included), each row as text: the tables that show a secret."""
    conn = await asyncpg.connect(dsn)
    try:
        tables = await conn.fetch(
            "SELECT schemaname, tablename FROM pg_tables "
            "WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
        )
        assert len(tables) > 10
        found = []
        for t in tables:
            rows = await conn.fetch(f'SELECT t::text AS row FROM "{t[0]}"."{t[1]}" t')
            found += [f"{t[1]}: {s}" for r in rows for s in leaked(r["row"])]
        return found
    finally:
        await conn.close()


async def test_no_secret_is_readable_in_the_database_kafka_logs_traces_or_metrics(
    db_dsn: str, target: HttpTarget, receiver: TraceReceiver
) -> None:
    image = task_image()
    before = await end_offsets(shared_bootstrap(), TOPICS)
    env = {**receiver.env(), "DUETIME_METRICS_ADDRESS": "127.0.0.1:0"}
    async with running_system(db_dsn, common_env=env, worker_extra=PODMAN_WORKERS) as system:
        headers, container = jobs(target, image)
        headers = await system.api.create(headers)
        container = await system.api.create(container)
        # A read-modify-write through the API keeps the secrets without seeing them.
        assert set(headers.target.http.headers.values()) == {"[REDACTED]"}
        for job in (headers, container):
            await eventually(_succeeded(system, job), 60, f"{job.display_name} ran")
        services = [system.api_service, system.scheduler, system.relay, *system.workers.values()]
        scrapes = [await scrape(metrics_port(s)) for s in services]
        await eventually(lambda: _exported(receiver), 10, "spans exported")
    after = await end_offsets(shared_bootstrap(), TOPICS)

    # The target got the real values.
    first, second = target.calls_to("/h")
    for call in (first, second):
        assert call.headers["Authorization"] == f"Bearer {HEADER_SECRET}"
        assert call.headers["X-Api-Key"] == KEY_SECRET
    posted = target.calls_to("/env")  # once, or again by a retry on a loaded machine
    assert posted
    assert all(f"API_TOKEN={ENV_SECRET}" in p.body.decode() for p in posted)

    assert await database_leaks(db_dsn) == []
    records = await read_between(shared_bootstrap(), before, after)
    assert any(r.topic in DISPATCH_TOPICS.values() for r in records)
    for r in records:
        shown = leaked(r.value) + leaked(r.key or b"") + leaked(repr(r.headers))
        assert shown == [], f"{r.topic}/{r.partition}/{r.offset}"
    for service in services:
        assert [line for line in service.output if leaked(line)] == []
    assert len(receiver.spans) > 10
    for span in receiver.spans:
        assert leaked(f"{span.name} {span.attributes!r}") == [], span.name
    for scraped in scrapes:
        assert leaked(scraped.text) == []


async def _exported(receiver: TraceReceiver) -> bool:
    return any(s.name == "call target" for s in receiver.spans)
