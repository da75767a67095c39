"""An in-process WorkerService on a fresh database, a worker-token client, and the few
database helpers its tests share (a scheduled run as the claimer makes it, the clock shift)."""

from __future__ import annotations

import functools
import json
import random
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import asyncpg
from google.protobuf.timestamp_pb2 import Timestamp
from grpc import aio

from duetime.jobs.v1 import job_pb2
from duetime.jobs.v1 import job_service_pb2 as svc
from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_core.attempts import AttemptSettings
from duetime_core.jobspec import Priority
from duetime_core.runkey import RunKey
from duetime_infra.admin import create_worker_token
from duetime_infra.codec.attempt_token import ATTEMPT_METADATA_KEY
from duetime_infra.codec.timeconv import timestamp_to_datetime
from duetime_infra.dispatch import dispatch_row
from duetime_infra.grpc.auth import Role, TokenCache
from duetime_infra.grpc.interceptors import DuetimeInterceptor
from duetime_infra.grpc.server import GrpcServer
from duetime_infra.grpc.tls import channel_credentials, server_credentials
from duetime_infra.pg.attempts.store import AttemptStore
from duetime_infra.pg.pool import create_pool
from duetime_infra.pg.teams.store import principal_for
from duetime_infra.secrets.sealing import SecretBox
from duetime_infra.tls import ClientTls, ServerTls
from duetime_infra.tracecontext import new_run_trace, stored_trace
from duetime_scheduler.worker_servicer import WorkerServicer
from testkit.api import ApiClient
from testkit.polling import eventually
from testkit.secrets import secret_box

SERVICE_NAME = wpb.DESCRIPTOR.services_by_name["WorkerService"].full_name


@dataclass
class WorkerClient:
    stub: worker_service_pb2_grpc.WorkerServiceAsyncStub
    token: str
    address: str
    dsn: str
    pool: asyncpg.Pool[asyncpg.Record]
    db: asyncpg.Connection[asyncpg.Record]

    def auth(self, attempt: int | str | None = None) -> tuple[tuple[str, str], ...]:
        metadata = [("authorization", f"Bearer {self.token}")]
        if attempt is not None:
            metadata.append((ATTEMPT_METADATA_KEY, str(attempt)))
        return tuple(metadata)

    async def start(
        self, run_id: uuid.UUID | str, delivery: str = "d-1", worker: str = "w-1"
    ) -> wpb.StartAttemptResponse:
        """A start through the deprecated single RPC: the scheduler answers it with the batch
        code (a batch of one), so the tests that use it exercise the workers' path."""
        request = wpb.StartAttemptRequest(
            run_id=str(run_id), delivery_id=delivery, worker_id=worker
        )
        response: wpb.StartAttemptResponse = await self.stub.StartAttempt(
            request, metadata=self.auth()
        )
        return response

    async def complete(
        self,
        run_id: uuid.UUID | str,
        attempt: int,
        result: wpb.AttemptResult.ValueType = wpb.ATTEMPT_RESULT_SUCCEEDED,
        *,
        error: str = "",
        retryable: bool = True,
        worker: str = "w-1",
    ) -> wpb.CompleteAttemptResponse:
        """A report through the deprecated single RPC, its fencing token in metadata: a batch
        of one to the scheduler, as ``start``."""
        request = wpb.CompleteAttemptRequest(
            run_id=str(run_id), result=result, error=error, retryable=retryable, worker_id=worker
        )
        response: wpb.CompleteAttemptResponse = await self.stub.CompleteAttempt(
            request, metadata=self.auth(attempt)
        )
        return response

    async def shift_clock(self, delta: timedelta) -> None:
        """Moves the database clock (every duetime_now()) by ``delta`` from where it is."""
        await self.db.execute(
            """UPDATE duetime_clock SET "offset" = "offset" + $1::interval""", delta
        )

    async def now(self) -> datetime:
        value: datetime = await self.db.fetchval("SELECT duetime_now()")
        return value

    async def waiting_for_lock(self, name: str) -> None:
        """Until a statement named ``name`` (its ``/* name */`` tag) waits for a lock."""

        async def waiting() -> bool:
            found = await self.db.fetchval(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE wait_event_type = 'Lock' AND query LIKE $1",
                f"/* {name} */%",
            )
            return int(found) > 0

        await eventually(waiting, 5, f"{name} waiting for a lock", interval=0.01)

    async def run_row(self, run_id: uuid.UUID | str) -> asyncpg.Record:
        row = await self.db.fetchrow("SELECT * FROM runs WHERE run_id = $1", uuid.UUID(str(run_id)))
        assert row is not None
        return row

    async def attempts(self, run_id: uuid.UUID | str) -> list[asyncpg.Record]:
        return list(
            await self.db.fetch(
                # xmin: the transaction that last wrote the attempt's row (the latest
                # attempt's is its run's).
                "SELECT v.*, coalesce(a.xmin::text, r.xmin::text) AS xmin FROM run_attempts v "
                "JOIN runs r USING (run_id, nominal_time) "
                "LEFT JOIN attempts a USING (run_id, nominal_time, number) "
                "WHERE v.run_id = $1 ORDER BY v.number",
                uuid.UUID(str(run_id)),
            )
        )

    async def queue_scheduled_run(
        self,
        job_id: uuid.UUID | str,
        nominal_time: datetime,
        effective_time: datetime | None = None,
        *,
        state: str = "QUEUED",
    ) -> uuid.UUID:
        """A scheduled run as the claimer makes it: the job's spec as its snapshot, the budget
        of its retry policy, a trace, and (when QUEUED) its dispatch outbox row."""
        job_id = uuid.UUID(str(job_id))
        run_id = uuid.uuid4()
        trace = new_run_trace(run_id)
        effective = effective_time or nominal_time
        row = await self.db.fetchrow(
            """INSERT INTO runs (run_id, job_id, team_id, partition, nominal_time,
                                 effective_time, origin, state, attempt_limit, traceparent,
                                 trace_context, job_version, priority)
               SELECT $1, j.job_id, j.team_id, j.partition, $3, $4, 'SCHEDULE', $5,
                      (j.spec->'retry'->>'max_attempts')::integer, $7, $6, j.version,
                      j.spec->>'priority'
               FROM jobs j WHERE j.job_id = $2
               RETURNING team_id, priority""",
            run_id,
            job_id,
            nominal_time,
            effective,
            state,
            *stored_trace(trace.traceparent, run_id),
        )
        assert row is not None
        if state == "QUEUED":
            out = dispatch_row(
                run_id=run_id,
                key=RunKey.scheduled(job_id, nominal_time),
                team_id=row["team_id"],
                effective_time=effective,
                priority=Priority(row["priority"]),
                traceparent=trace.traceparent,
                now=await self.now(),
            )
            await self.db.execute(
                "INSERT INTO outbox (topic, message_key, payload, headers, team_id) "
                "VALUES ($1, $2, $3, $4::jsonb, $5)",
                out.topic,
                out.key,
                out.payload,
                json.dumps(out.headers),
                out.team_id,
            )
        return run_id


@asynccontextmanager
async def running_worker_api(
    dsn: str,
    settings: AttemptSettings | None = None,
    rand: Callable[[], float] | None = None,
    server_settings: dict[str, str] | None = None,
    server_tls: ServerTls | None = None,
    client_tls: ClientTls | None = None,
    secrets: SecretBox | None = None,
) -> AsyncIterator[WorkerClient]:
    """An in-process WorkerService, plaintext unless given TLS settings for the server and
    the client (a server TLS with a client CA requires client certificates, as the scheduler's
    with DUETIME_WORKER_CLIENT_CA_FILE)."""
    db = await asyncpg.connect(dsn)
    token = await create_worker_token(db)
    pool = await create_pool(dsn, max_size=8, server_settings=server_settings)
    store = AttemptStore(pool, settings or AttemptSettings(), rand or random.random)
    server = GrpcServer(
        "127.0.0.1:0",
        [SERVICE_NAME],
        interceptors=[
            DuetimeInterceptor(
                TokenCache(functools.partial(principal_for, pool)),
                {SERVICE_NAME: Role.WORKER},
                Role.WORKER if server_tls is not None and server_tls.client_ca_file else None,
            )
        ],
        credentials=server_credentials(server_tls),
    )
    worker_service_pb2_grpc.add_WorkerServiceServicer_to_server(
        WorkerServicer(store, secrets or secret_box()), server.server
    )
    await server.start()
    address = f"127.0.0.1:{server.port}"
    if client_tls is None:
        channel = aio.insecure_channel(address)
    else:
        channel = aio.secure_channel(address, channel_credentials(client_tls))
    try:
        yield WorkerClient(
            worker_service_pb2_grpc.WorkerServiceStub(channel), token, address, dsn, pool, db
        )
    finally:
        await channel.close()
        await server.stop(0)
        await pool.close()
        await db.close()


def as_datetime(ts: Timestamp) -> datetime:
    """A protobuf Timestamp as an aware UTC datetime."""
    return timestamp_to_datetime(ts)


def job_message(
    *,
    overlap: job_pb2.OverlapPolicy.ValueType = job_pb2.OVERLAP_POLICY_ALLOW,
    misfire: job_pb2.MisfirePolicy.ValueType = job_pb2.MISFIRE_POLICY_RUN_ONCE,
    threshold: timedelta = timedelta(seconds=60),
    max_attempts: int = 3,
    initial_backoff: timedelta = timedelta(seconds=10),
    max_backoff: timedelta = timedelta(seconds=60),
    attempt_timeout: timedelta = timedelta(minutes=5),
) -> job_pb2.Job:
    """A job whose schedule is far away (runs are made by the tests), with these policies."""
    job = job_pb2.Job(
        display_name="attempts",
        schedule=job_pb2.Schedule(
            cron=job_pb2.CronSchedule(expression="0 0 1 1 *", time_zone="UTC")
        ),
        target=job_pb2.Target(
            http=job_pb2.HttpTarget(
                url="https://billing.internal/run",
                headers={"Authorization": "Bearer s3cret"},
            )
        ),
        overlap_policy=overlap,
        misfire=job_pb2.MisfireSettings(policy=misfire),
        retry_policy=job_pb2.RetryPolicy(max_attempts=max_attempts, multiplier=2.0),
    )
    job.misfire.threshold.FromTimedelta(threshold)
    job.retry_policy.initial_backoff.FromTimedelta(initial_backoff)
    job.retry_policy.max_backoff.FromTimedelta(max_backoff)
    job.attempt_timeout.FromTimedelta(attempt_timeout)
    return job


async def create_job(api: ApiClient, job: job_pb2.Job | None = None) -> job_pb2.Job:
    created: job_pb2.Job = (
        await api.stub.CreateJob(
            svc.CreateJobRequest(job=job or job_message()), metadata=api.auth()
        )
    ).job
    return created


async def trigger(api: ApiClient, job: job_pb2.Job, request_id: str) -> uuid.UUID:
    """A triggered run through the job API (its outbox row included); its id."""
    run = (
        await api.stub.TriggerJob(
            svc.TriggerJobRequest(name=job.name, request_id=request_id), metadata=api.auth()
        )
    ).run
    return uuid.UUID(run.run_id)


async def exchange(stream: Any, request: wpb.HeartbeatRequest) -> wpb.HeartbeatResponse:
    """One beat on a Heartbeat stream: writes ``request``, reads its answer."""
    await stream.write(request)
    response = await stream.read()
    assert isinstance(response, wpb.HeartbeatResponse), response
    return response
