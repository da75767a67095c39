"""A PostgreSQL restart under the running api and scheduler: while the database is down their
calls answer UNAVAILABLE with a retry delay (google.rpc.RetryInfo), never INTERNAL, batched
worker calls answer each entry so, and once it is back the same processes answer normally. The
database is the test's own (over TLS with the stack's certificate when the stack has one)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
import grpc
import pytest
from google.rpc import error_details_pb2
from grpc import aio
from grpc_status import rpc_status

from duetime.jobs.v1 import job_service_pb2 as svc
from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_infra.admin import create_team, create_worker_token
from testkit.fleet import new_prefix, scheduler_env
from testkit.polling import eventually
from testkit.postgres import PrivatePostgres, private_postgres
from testkit.processes import Service, service
from testkit.system import Api
from testkit.tls import service_channel, stack_certs, with_stack_tls

pytestmark = pytest.mark.timeout(120)


@dataclass
class Running:
    pg: PrivatePostgres
    api: Api
    scheduler: Service
    api_service: Service
    workers: Any  # WorkerServiceStub
    worker_auth: tuple[tuple[str, str], ...]


def database_env(dsn: str) -> dict[str, str]:
    """The services' settings for the private database, over TLS when the stack has
    certificates (the private server serves the stack's)."""
    env = with_stack_tls({"DUETIME_PG_DSN": dsn})
    plaintext = {p for p in env["DUETIME_PLAINTEXT"].split(",") if p}
    if stack_certs() is None:
        plaintext.add("postgres")
    else:
        plaintext.discard("postgres")
        env["DUETIME_PG_SSLMODE"] = "verify-full"
    env["DUETIME_PLAINTEXT"] = ",".join(sorted(plaintext))
    return env


@asynccontextmanager
async def running() -> AsyncIterator[Running]:
    async with AsyncExitStack() as stack:
        pg = await stack.enter_async_context(private_postgres(stack_certs()))
        conn = await asyncpg.connect(pg.dsn, ssl=False)
        try:
            team_token = await create_team(conn, "team-restart")
            worker_token = await create_worker_token(conn)
        finally:
            await conn.close()
        env = {**database_env(pg.dsn), "DUETIME_SHUTDOWN_GRACE_SECONDS": "1"}
        api_service = await stack.enter_async_context(
            service(
                "duetime_api", {**env, "DUETIME_API_ADDRESS": "127.0.0.1:0"}, "DUETIME_API_PORT"
            )
        )
        scheduler = await stack.enter_async_context(
            service(
                "duetime_scheduler",
                {**env, **scheduler_env(pg.dsn, new_prefix(), "s-restart")},
                "DUETIME_SCHEDULER_PORT",
            )
        )
        api = Api(api_service.address, team_token)
        stack.push_async_callback(api.close)
        channel = service_channel(scheduler.address)
        stack.push_async_callback(channel.close)
        workers = worker_service_pb2_grpc.WorkerServiceStub(channel)
        auth = (("authorization", f"Bearer {worker_token}"),)
        yield Running(pg, api, scheduler, api_service, workers, auth)


async def answer(call: Awaitable[Any]) -> tuple[grpc.StatusCode, str, float | None]:
    """(code, ErrorInfo reason, RetryInfo delay in seconds) of a call; OK for success."""
    try:
        await call
    except aio.AioRpcError as error:
        reason, delay = "", None
        status = rpc_status.from_call(error)  # type: ignore[arg-type]
        for detail in status.details if status is not None else ():
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                reason = info.reason
            elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                retry = error_details_pb2.RetryInfo()
                detail.Unpack(retry)
                delay = retry.retry_delay.ToTimedelta().total_seconds()
        return error.code(), reason, delay
    return grpc.StatusCode.OK, "", None


def calls(r: Running) -> dict[str, Callable[[], Awaitable[Any]]]:
    """One call of each kind that needs the database: the api's (its token lookup included)
    and the scheduler's, one by one and batched."""
    start = wpb.StartAttemptRequest(run_id=str(uuid.uuid4()), delivery_id="d", worker_id="w")
    return {
        "ListJobs": lambda: r.api.stub.ListJobs(
            svc.ListJobsRequest(), metadata=r.api.metadata, timeout=10
        ),
        "StartAttempt": lambda: r.workers.StartAttempt(start, metadata=r.worker_auth, timeout=10),
    }


async def test_a_database_restart_answers_unavailable_not_internal() -> None:
    async with running() as r:
        for name, call in calls(r).items():
            assert (await answer(call()))[0] == grpc.StatusCode.OK, name

        await r.pg.stop()
        for _ in range(3):  # the pool's connections are gone, then new ones are refused
            for name, call in calls(r).items():
                assert await answer(call()) == (
                    grpc.StatusCode.UNAVAILABLE,
                    "DATABASE_UNAVAILABLE",
                    1.0,
                ), name
        batch = wpb.StartAttemptsRequest(
            starts=[
                wpb.StartAttemptRequest(run_id=str(uuid.uuid4()), delivery_id="d", worker_id="w")
                for _ in range(3)
            ]
        )
        started = await r.workers.StartAttempts(batch, metadata=r.worker_auth, timeout=10)
        assert [(e.error.code, e.error.reason) for e in started.results] == [
            ("UNAVAILABLE", "DATABASE_UNAVAILABLE")
        ] * 3

        await r.pg.start()

        async def answering() -> bool:
            codes = [(await answer(call()))[0] for call in calls(r).values()]
            return codes == [grpc.StatusCode.OK] * len(codes)

        await eventually(answering, 30, "both services answer again", interval=0.2)
        for process in (r.api_service, r.scheduler):
            assert process.process.returncode is None
            assert not [line for line in process.output if "unexpected error" in line]
