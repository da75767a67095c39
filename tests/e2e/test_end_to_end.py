"""The four services as separate processes (api, scheduler, relay, worker) on a fresh database,
real etcd and Kafka, and a real HTTP target that records every call: jobs created through the
API run at their time and never before, failures are retried, and exhausted runs are
dead-lettered.

The dispatch topics are shared with other tests, so the worker's consumer group is this test's
own and starts at the topics' current ends; messages of other databases' runs that still reach
it are refused by this scheduler (RUN_NOT_FOUND) and dropped.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer
from grpc import aio

from duetime.jobs.v1 import job_pb2, job_service_pb2, job_service_pb2_grpc, run_pb2
from duetime_infra.admin import create_team, create_worker_token
from duetime_infra.kafka.topics import DISPATCH_TOPICS
from tests.support.fleet import eventually, new_prefix, scheduler_env
from tests.support.http_target import Behaviour, HttpTarget, http_target
from tests.support.kafka import end_offsets, shared_bootstrap
from tests.support.processes import Service, service

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]

# The target's receive time and the run's effective time come from two clocks of this machine
# (the host's and PostgreSQL's), read at microsecond resolution.
CLOCK_SLACK = timedelta(milliseconds=5)


async def start_group_at_end(group: str) -> None:
    """Commits the consumer group's offsets at the topics' current ends, so the worker reads
    only what is published from now on."""
    bootstrap = shared_bootstrap()
    ends = await end_offsets(bootstrap, DISPATCH_TOPICS.values())
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
    )
    await consumer.start()
    try:
        consumer.assign(list(ends))
        await consumer.commit(ends)
    finally:
        await consumer.stop()


class Api:
    def __init__(self, service: Service, token: str) -> None:
        self._channel = aio.insecure_channel(service.address)
        self.stub: job_service_pb2_grpc.JobServiceAsyncStub = job_service_pb2_grpc.JobServiceStub(
            self._channel
        )
        self.metadata = (("authorization", f"Bearer {token}"),)

    async def create(self, job: job_pb2.Job) -> job_pb2.Job:
        response = await self.stub.CreateJob(
            job_service_pb2.CreateJobRequest(job=job), metadata=self.metadata
        )
        return response.job

    async def runs(self, job: job_pb2.Job) -> list[run_pb2.Run]:
        response = await self.stub.ListRuns(
            job_service_pb2.ListRunsRequest(parent=job.name, page_size=1000),
            metadata=self.metadata,
        )
        return list(response.runs)

    async def close(self) -> None:
        await self._channel.close()


def http_job(
    name: str,
    url: str,
    *,
    at: datetime | None = None,
    every: timedelta | None = None,
    max_attempts: int = 3,
) -> job_pb2.Job:
    job = job_pb2.Job(
        display_name=name,
        target=job_pb2.Target(http=job_pb2.HttpTarget(url=url)),
        retry_policy=job_pb2.RetryPolicy(max_attempts=max_attempts, multiplier=2.0),
    )
    if at is not None:
        job.schedule.at.run_time.FromDatetime(at)
    if every is not None:
        job.schedule.interval.interval.FromTimedelta(every)
    job.retry_policy.initial_backoff.FromTimedelta(timedelta(milliseconds=100))
    job.retry_policy.max_backoff.FromTimedelta(timedelta(milliseconds=500))
    job.attempt_timeout.FromTimedelta(timedelta(seconds=10))
    return job


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with http_target() as server:
        yield server


async def test_jobs_run_on_time_retry_and_dead_letter(db_dsn: str, target: HttpTarget) -> None:
    began = time.monotonic()
    conn = await asyncpg.connect(db_dsn)
    try:
        team_token = await create_team(conn, "team-e2e")
        worker_token = await create_worker_token(conn)
    finally:
        await conn.close()
    group = f"duetime-test-workers-{uuid.uuid4().hex[:12]}"
    await start_group_at_end(group)
    prefix = new_prefix()
    base = {"DUETIME_PG_DSN": db_dsn, "DUETIME_SHUTDOWN_GRACE_SECONDS": "2"}
    async with (
        service(
            "duetime_api", {**base, "DUETIME_API_ADDRESS": "127.0.0.1:0"}, "DUETIME_API_PORT"
        ) as api_service,
        service(
            "duetime_scheduler",
            {**base, **scheduler_env(db_dsn, prefix, "s1")},
            "DUETIME_SCHEDULER_PORT",
        ) as scheduler,
        service("duetime_relay", base, "DUETIME_RELAY_PORT"),
        service(
            "duetime_worker",
            {
                "DUETIME_SCHEDULER_TARGET": scheduler.address,
                "DUETIME_WORKER_TOKEN": worker_token,
                "DUETIME_WORKER_ID": "e2e-worker",
                "DUETIME_WORKER_GROUP": group,
                "DUETIME_TARGET_ALLOW": "127.0.0.1",
                "DUETIME_HEARTBEAT_INTERVAL": "1",
                "DUETIME_SHUTDOWN_GRACE_SECONDS": "2",
            },
            "DUETIME_WORKER_PORT",
        ) as worker,
    ):
        print(f"four services up in {time.monotonic() - began:.1f} s")
        api = Api(api_service, team_token)
        try:
            now = datetime.now(UTC)
            one_off = await api.create(
                http_job("one-off", target.on("/once", Behaviour()), at=now + timedelta(seconds=3))
            )
            interval = await api.create(
                http_job("every-2s", target.on("/every", Behaviour()), every=timedelta(seconds=2))
            )
            flaky = await api.create(
                http_job(
                    "flaky",
                    target.on("/flaky", Behaviour(fail_first=2)),
                    at=now + timedelta(seconds=1),
                    max_attempts=5,
                )
            )
            broken = await api.create(
                http_job(
                    "broken",
                    target.on("/broken", Behaviour(status=500)),
                    at=now + timedelta(seconds=1),
                    max_attempts=2,
                )
            )

            async def states(job: job_pb2.Job) -> list[int]:
                return [run.state for run in await api.runs(job)]

            async def one_off_done() -> bool:
                return await states(one_off) == [run_pb2.RUN_STATE_SUCCEEDED]

            async def interval_done() -> bool:
                return (await states(interval)).count(run_pb2.RUN_STATE_SUCCEEDED) >= 3

            async def flaky_done() -> bool:
                return await states(flaky) == [run_pb2.RUN_STATE_SUCCEEDED]

            async def broken_done() -> bool:
                return await states(broken) == [run_pb2.RUN_STATE_DEAD_LETTERED]

            took = await eventually(one_off_done, 30, "the one-off run SUCCEEDED")
            print(f"one-off succeeded {took:.1f} s after creation")
            await eventually(interval_done, 30, "three interval runs SUCCEEDED")
            await eventually(flaky_done, 30, "the flaky run SUCCEEDED")
            await eventually(broken_done, 30, "the broken run DEAD_LETTERED")

            # (1) Every succeeded run called the target with its run key, never early.
            for job, path in ((one_off, "/once"), (interval, "/every")):
                calls = {c.headers["Idempotency-Key"]: c for c in target.calls_to(path)}
                succeeded = [
                    r for r in await api.runs(job) if r.state == run_pb2.RUN_STATE_SUCCEEDED
                ]
                assert succeeded
                for run in succeeded:
                    call = calls[run.idempotency_key]
                    effective = run.effective_time.ToDatetime(UTC)
                    assert call.time >= effective - CLOCK_SLACK, (call.time, effective)
                    assert call.headers["Duetime-Attempt"] == str(run.attempt)
                    assert call.headers["traceparent"]
                    assert [a.outcome for a in run.attempts] == [run_pb2.ATTEMPT_OUTCOME_SUCCEEDED]
                    assert run.attempts[0].worker == "e2e-worker"
                lateness = [
                    (
                        calls[r.idempotency_key].time - r.effective_time.ToDatetime(UTC)
                    ).total_seconds()
                    for r in succeeded
                ]
                print(f"{path}: start lateness max {max(lateness) * 1000:.0f} ms")

            # (2) Two failures, then success: three attempts, numbered 1, 2, 3.
            (flaky_run,) = await api.runs(flaky)
            assert [a.outcome for a in flaky_run.attempts] == [
                run_pb2.ATTEMPT_OUTCOME_FAILED,
                run_pb2.ATTEMPT_OUTCOME_FAILED,
                run_pb2.ATTEMPT_OUTCOME_SUCCEEDED,
            ]
            flaky_calls = target.calls_to("/flaky")
            assert [c.headers["Duetime-Attempt"] for c in flaky_calls] == ["1", "2", "3"]
            assert len({c.headers["Idempotency-Key"] for c in flaky_calls}) == 1

            # (3) Always failing, two attempts allowed: DEAD_LETTERED after both.
            (broken_run,) = await api.runs(broken)
            assert [a.outcome for a in broken_run.attempts] == [
                run_pb2.ATTEMPT_OUTCOME_FAILED,
                run_pb2.ATTEMPT_OUTCOME_FAILED,
            ]
            assert len(target.calls_to("/broken")) == 2
        finally:
            await api.close()
    assert worker.process.returncode == 0, "\n".join(worker.output[-30:])
    print(f"end to end in {time.monotonic() - began:.1f} s")
