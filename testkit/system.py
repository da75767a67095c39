"""The whole system as separate processes — api, scheduler, relay and worker(s) — on a fresh
database with real etcd and Kafka, plus a client for the Job API.

Over TLS, as deployed: the api and the scheduler serve the environment's certificate
(``scripts/stack env``), the scheduler requires client certificates of its CA and the workers
present theirs without a token (mTLS), and PostgreSQL, etcd and Kafka are reached over TLS
wherever the stack serves it (``with_stack_tls``), except for servers of a test's own.

The dispatch topics are shared with other tests, so each system's workers use a consumer group
of their own that starts at the topics' current ends; messages of other databases' runs that
still reach them are refused by this system's scheduler (RUN_NOT_FOUND) and dropped. Their
dead-letter notification group starts at the dead-letter topic's end likewise; a dead-letter
event of another system running at the same time is notified by both systems' workers (the
same notification, with the same idempotency key).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import asyncpg

from duetime.jobs.v1 import job_pb2, job_service_pb2, job_service_pb2_grpc, run_pb2
from duetime_infra.admin import create_team, create_worker_token
from duetime_infra.kafka.groups import group_to_end
from duetime_infra.kafka.topics import DEAD_LETTER_TOPIC, DISPATCH_TOPICS
from testkit.fleet import new_prefix, scheduler_env
from testkit.gateway import running_gateway
from testkit.kafka import shared_bootstrap
from testkit.processes import Service, enter_together, service
from testkit.tls import service_channel, service_client_tls, with_stack_tls

TEAM = "team-e2e"


async def start_group_at_end(group: str, topics: Iterable[str] = DISPATCH_TOPICS.values()) -> None:
    """Commits the consumer group's offsets at the topics' current ends, so its workers read
    only what is published from now on."""
    await group_to_end(shared_bootstrap(), group, topics)


def notify_group(group: str) -> str:
    """The workers' dead-letter notification group, beside their dispatch group."""
    return f"{group}-notify"


async def start_worker_groups_at_end(group: str) -> None:
    """Workers' dispatch group ``group`` and its notification group, both at their topics'
    current ends: workers started with them see only runs and dead letters from now on (a
    stale dead letter could name a port some other test's server now listens on)."""
    await start_group_at_end(group)
    await start_group_at_end(notify_group(group), [DEAD_LETTER_TOPIC])


class Api:
    """The Job API as one team sees it."""

    def __init__(self, address: str, token: str, settings: Mapping[str, str] = {}) -> None:
        self._channel = service_channel(address, settings)
        self.stub: job_service_pb2_grpc.JobServiceAsyncStub = job_service_pb2_grpc.JobServiceStub(
            self._channel
        )
        self.metadata = (("authorization", f"Bearer {token}"),)

    async def create(self, job: job_pb2.Job) -> job_pb2.Job:
        response = await self.stub.CreateJob(
            job_service_pb2.CreateJobRequest(job=job), metadata=self.metadata
        )
        return response.job

    async def delete(self, job: job_pb2.Job) -> None:
        request = job_service_pb2.DeleteJobRequest(name=job.name)
        await self.stub.DeleteJob(request, metadata=self.metadata)

    async def runs(self, job: job_pb2.Job) -> list[run_pb2.Run]:
        runs: list[run_pb2.Run] = []
        page_token = ""
        while True:
            response = await self.stub.ListRuns(
                job_service_pb2.ListRunsRequest(
                    parent=job.name, page_size=1000, page_token=page_token
                ),
                metadata=self.metadata,
            )
            runs.extend(response.runs)
            page_token = response.next_page_token
            if not page_token:
                return runs

    async def close(self) -> None:
        await self._channel.close()


def http_job(
    name: str,
    url: str,
    *,
    at: datetime | None = None,
    every: timedelta | None = None,
    after: timedelta | None = None,
    cron: tuple[str, str] | None = None,
    max_attempts: int = 3,
    attempt_timeout: timedelta = timedelta(seconds=10),
    delivery: job_pb2.Delivery.ValueType = job_pb2.DELIVERY_UNSPECIFIED,
) -> job_pb2.Job:
    """An HTTP job with short backoff (100 ms doubling, cap 500 ms), as tests want it, run
    once ``at`` an instant, ``every`` interval, once ``after`` a delay from creation, or on a
    ``cron`` (expression, time zone)."""
    job = job_pb2.Job(
        display_name=name,
        target=job_pb2.Target(http=job_pb2.HttpTarget(url=url)),
        retry_policy=job_pb2.RetryPolicy(max_attempts=max_attempts, multiplier=2.0),
        delivery=delivery,
    )
    if at is not None:
        job.schedule.at.run_time.FromDatetime(at)
    if every is not None:
        job.schedule.interval.interval.FromTimedelta(every)
    if after is not None:
        job.schedule.delay.delay.FromTimedelta(after)
    if cron is not None:
        job.schedule.cron.expression, job.schedule.cron.time_zone = cron
    job.retry_policy.initial_backoff.FromTimedelta(timedelta(milliseconds=100))
    job.retry_policy.max_backoff.FromTimedelta(timedelta(milliseconds=500))
    job.attempt_timeout.FromTimedelta(attempt_timeout)
    return job


@dataclass
class System:
    db_dsn: str
    api: Api
    api_service: Service
    scheduler: Service
    relay: Service
    team_token: str
    worker_token: str
    group: str
    # Workers authenticate with their client certificates (the scheduler requires them).
    mtls: bool = False
    # Every worker's settings before its own (TLS, the test's common ones).
    common_env: Mapping[str, str] = field(default_factory=dict)
    workers: dict[str, Service] = field(default_factory=dict)
    # The HTTP/JSON gateway in front of the api, when asked for (``gateway=True``).
    gateway: Service | None = None
    _stack: AsyncExitStack = field(default_factory=AsyncExitStack)

    def worker_env(self, worker_id: str, extra: Mapping[str, str] = {}) -> dict[str, str]:
        return with_stack_tls(
            {
                **self.common_env,
                "DUETIME_SCHEDULER_TARGET": self.scheduler.address,
                "DUETIME_WORKER_TOKEN": "" if self.mtls else self.worker_token,
                "DUETIME_WORKER_ID": worker_id,
                "DUETIME_WORKER_GROUP": self.group,
                "DUETIME_NOTIFY_GROUP": notify_group(self.group),
                "DUETIME_TARGET_ALLOW": "127.0.0.1",
                "DUETIME_HEARTBEAT_INTERVAL": "1",
                "DUETIME_SHUTDOWN_GRACE_SECONDS": "2",
                **extra,
            }
        )

    async def start_worker(self, worker_id: str, extra: Mapping[str, str] = {}) -> Service:
        """Starts one more worker process; it is stopped (SIGTERM) when the system stops."""
        started = await self._stack.enter_async_context(
            service("duetime_worker", self.worker_env(worker_id, extra), "DUETIME_WORKER_PORT")
        )
        self.workers[worker_id] = started
        return started

    async def start_workers(self, worker_ids: list[str], extra: Mapping[str, str] = {}) -> None:
        """Starts several more workers at once; they are stopped at once too."""
        started = await enter_together(
            self._stack,
            [
                service("duetime_worker", self.worker_env(w, extra), "DUETIME_WORKER_PORT")
                for w in worker_ids
            ],
        )
        self.workers.update(zip(worker_ids, started, strict=True))


@asynccontextmanager
async def running_system(
    db_dsn: str,
    *,
    workers: int = 1,
    notification_url: str = "",
    common_env: Mapping[str, str] = {},
    scheduler_extra: Mapping[str, str] = {},
    relay_extra: Mapping[str, str] = {},
    worker_extra: Mapping[str, str] = {},
    gateway: bool = False,
) -> AsyncIterator[System]:
    """The four services as processes, and the gateway in front of the api with ``gateway``;
    workers are named ``w1``, ``w2``, …"""
    conn = await asyncpg.connect(db_dsn)
    try:
        team_token = await create_team(conn, TEAM, notification_url)
        worker_token = await create_worker_token(conn)
    finally:
        await conn.close()
    group = f"duetime-test-workers-{uuid.uuid4().hex[:12]}"
    await start_worker_groups_at_end(group)
    base = {
        "DUETIME_PG_DSN": db_dsn,
        "DUETIME_SHUTDOWN_GRACE_SECONDS": "2",
        **common_env,
    }
    client_tls = service_client_tls(base)
    mtls = client_tls is not None and bool(client_tls.cert_file)
    worker_ca = {"DUETIME_WORKER_CLIENT_CA_FILE": client_tls.ca_file} if mtls and client_tls else {}
    async with AsyncExitStack() as stack:
        api_service, scheduler, relay = await enter_together(
            stack,
            [
                service(
                    "duetime_api",
                    with_stack_tls({**base, "DUETIME_API_ADDRESS": "127.0.0.1:0"}),
                    "DUETIME_API_PORT",
                ),
                service(
                    "duetime_scheduler",
                    with_stack_tls(
                        {
                            **base,
                            **scheduler_env(db_dsn, new_prefix(), "s1"),
                            **worker_ca,
                            **scheduler_extra,
                        }
                    ),
                    "DUETIME_SCHEDULER_PORT",
                ),
                service(
                    "duetime_relay",
                    with_stack_tls({**base, **relay_extra}),
                    "DUETIME_RELAY_PORT",
                ),
            ],
        )
        api = Api(api_service.address, team_token, base)
        stack.push_async_callback(api.close)
        system = System(
            db_dsn, api, api_service, scheduler, relay, team_token, worker_token, group, mtls, base
        )
        if gateway:
            system.gateway = await stack.enter_async_context(
                running_gateway(api_service.address, with_stack_tls(base))
            )
        # Workers stop first (their own stack), while the scheduler still answers them.
        async with system._stack:
            await system.start_workers([f"w{n}" for n in range(1, workers + 1)], worker_extra)
            yield system
