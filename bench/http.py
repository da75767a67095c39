"""`python -m bench.http [--calls N]`: what the gateway adds to a call's latency.

The api and the gateway as processes on a fresh database (over TLS as deployed, with the
environment's certificates: `eval "$(scripts/stack env)"`), one job, then GetJob of that job
one call at a time, in rounds that take each path once in turn: gRPC to the api directly, gRPC
through the gateway (Envoy's hop alone), and HTTP/JSON through the gateway (`GET /v1/jobs/{id}`
over HTTP/1.1 keep-alive: the hop plus transcoding, and a different client library). Prints
p50/p99 of each and what each adds to the direct call's p50 (goal: HTTP/JSON adds at most 2 ms).
Latency, not throughput: one call in flight, so the figures are the paths', not the queue's.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from datetime import timedelta

import aiohttp
import asyncpg

from bench.harness import cpu_model, load, quantiles
from duetime.jobs.v1 import job_service_pb2, job_service_pb2_grpc
from duetime_infra.admin import create_team
from testkit.databases import create_database, drop_database, migrated_template
from testkit.gateway import gateway_tls, running_gateway
from testkit.processes import service
from testkit.system import http_job
from testkit.tls import service_channel

GOAL_MS = 2.0

Call = Callable[[], Awaitable[None]]


def row(name: str, values: list[float], direct_p50: float) -> str:
    p50, p99, top = quantiles(values)
    added = (p50 - direct_p50) * 1000
    return (
        f"{name:<26} p50 {p50 * 1000:6.2f} ms  p99 {p99 * 1000:6.2f} ms  "
        f"max {top * 1000:6.2f} ms  p50 added {added:+6.2f} ms"
    )


async def timed(call: Call) -> float:
    began = time.perf_counter()
    await call()
    return time.perf_counter() - began


async def measure(paths: Mapping[str, Call], calls: int, warm_up: int) -> dict[str, list[float]]:
    for _ in range(warm_up):
        for call in paths.values():
            await call()
    times: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(calls):
        for name, call in paths.items():
            times[name].append(await timed(call))
    return times


async def run(calls: int, warm_up: int) -> bool:
    template = await migrated_template()
    database = f"duetime_bench_http_{uuid.uuid4().hex[:8]}"
    dsn = await create_database(database, template=template)
    try:
        conn = await asyncpg.connect(dsn)
        try:
            token = await create_team(conn, "bench-http")
        finally:
            await conn.close()
        async with AsyncExitStack() as stack:
            env = {"DUETIME_PG_DSN": dsn, "DUETIME_API_ADDRESS": "127.0.0.1:0"}
            api = await stack.enter_async_context(service("duetime_api", env, "DUETIME_API_PORT"))
            gateway = await stack.enter_async_context(running_gateway(api.address))
            metadata = (("authorization", f"Bearer {token}"),)
            direct = service_channel(api.address)
            via_envoy = service_channel(gateway.address)
            stack.push_async_callback(direct.close)
            stack.push_async_callback(via_envoy.close)
            stub = job_service_pb2_grpc.JobServiceStub(direct)
            proxied = job_service_pb2_grpc.JobServiceStub(via_envoy)
            job = http_job("bench", "https://example.com/", every=timedelta(hours=1))
            created = await stub.CreateJob(
                job_service_pb2.CreateJobRequest(job=job), metadata=metadata
            )
            request = job_service_pb2.GetJobRequest(name=created.job.name)
            session = await stack.enter_async_context(
                aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=gateway_tls(), limit=1))
            )
            url = f"https://{gateway.address}/v1/jobs/{created.job.job_id}"
            headers = {"Authorization": f"Bearer {token}"}

            async def grpc_direct() -> None:
                await stub.GetJob(request, metadata=metadata)

            async def grpc_gateway() -> None:
                await proxied.GetJob(request, metadata=metadata)

            async def http_gateway() -> None:
                async with session.get(url, headers=headers) as response:
                    assert response.status == 200, await response.text()
                    await response.read()

            paths = {
                "gRPC, direct": grpc_direct,
                "gRPC, through Envoy": grpc_gateway,
                "HTTP/JSON, through Envoy": http_gateway,
            }
            times = await measure(paths, calls, warm_up)
    finally:
        await drop_database(database)
        await drop_database(template)
    direct_p50 = quantiles(times["gRPC, direct"])[0]
    print(f"GetJob, {calls} calls a path, one at a time; {cpu_model()}; {load()}")
    for name, values in times.items():
        print(row(name, values, direct_p50))
    added = (quantiles(times["HTTP/JSON, through Envoy"])[0] - direct_p50) * 1000
    verdict = "met" if added <= GOAL_MS else "MISSED"
    print(f"goal: HTTP/JSON adds at most {GOAL_MS:.0f} ms at p50: {verdict} ({added:+.2f} ms)")
    return added <= GOAL_MS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=2000, help="calls a path (default 2000)")
    parser.add_argument("--warm-up", type=int, default=200, help="uncounted calls a path first")
    args = parser.parse_args()
    raise SystemExit(0 if asyncio.run(run(args.calls, args.warm_up)) else 1)


if __name__ == "__main__":
    main()
