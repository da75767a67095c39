"""The four services' metrics endpoints, scraped over HTTP while a run succeeds, one is
dead-lettered and a stale report is refused: every counter moves by exactly what happened."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import grpc
import pytest
from grpc import aio

from duetime.jobs.v1 import run_pb2
from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_core.jobspec import PARTITIONS
from duetime_infra.codec.attempt_token import ATTEMPT_METADATA_KEY
from duetime_infra.kafka.topics import DISPATCH_TOPICS
from testkit.http_target import Behaviour, http_target
from testkit.metrics import Scrape, metrics_port, scrape
from testkit.polling import eventually
from testkit.system import System, http_job, running_system
from testkit.tls import service_channel

pytestmark = pytest.mark.timeout(90)

METRICS_ENV = {"DUETIME_METRICS_ADDRESS": "127.0.0.1:0"}


def scraped(port: int, holds: Callable[[Scrape], bool]) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return holds(await scrape(port))

    return check


async def stale_report(system: System, run: run_pb2.Run) -> grpc.StatusCode:
    """Reports attempt 1 of a finished run again, as a worker that woke up late would."""
    async with service_channel(system.scheduler.address) as channel:
        stub = worker_service_pb2_grpc.WorkerServiceStub(channel)
        try:
            await stub.CompleteAttempt(
                wpb.CompleteAttemptRequest(
                    run_id=run.name.rsplit("/", 1)[1],
                    worker_id="w1",
                    result=wpb.ATTEMPT_RESULT_SUCCEEDED,
                ),
                metadata=(
                    ("authorization", f"Bearer {system.worker_token}"),
                    (ATTEMPT_METADATA_KEY, "1"),
                ),
            )
        except aio.AioRpcError as error:
            return error.code()
    return grpc.StatusCode.OK


async def test_metrics_move_by_what_happened(db_dsn: str) -> None:
    async with (
        http_target() as target,
        running_system(db_dsn, common_env=METRICS_ENV) as system,
    ):
        scheduler = metrics_port(system.scheduler)
        relay = metrics_port(system.relay)
        worker = metrics_port(system.workers["w1"])
        api = metrics_port(system.api_service)
        await eventually(
            scraped(scheduler, lambda s: s.value("duetime_partitions_owned") == PARTITIONS),
            within=30,
            what="the only scheduler owns every partition",
        )
        before = await scrape(scheduler)
        assert before.value("duetime_runs_finished_total") == 0
        assert before.value("duetime_run_start_lateness_seconds_count") == 0

        at = datetime.now(UTC) + timedelta(seconds=1)
        ok = await system.api.create(http_job("ok", target.on("/ok", Behaviour()), at=at))
        broken = await system.api.create(
            http_job("broken", target.on("/broken", Behaviour(status=500)), at=at, max_attempts=1)
        )

        async def finished() -> bool:
            states = [r.state for job in (ok, broken) for r in await system.api.runs(job)]
            return states == [run_pb2.RUN_STATE_SUCCEEDED, run_pb2.RUN_STATE_DEAD_LETTERED]

        await eventually(finished, within=40, what="one run succeeded, one dead-lettered")
        (ok_run,) = await system.api.runs(ok)
        assert await stale_report(system, ok_run) == grpc.StatusCode.ABORTED

        after = await scrape(scheduler)
        assert after.value("duetime_runs_finished_total", state="SUCCEEDED") == 1
        assert after.value("duetime_runs_finished_total", state="DEAD_LETTERED") == 1
        assert after.value("duetime_runs_finished_total") == 2
        closed = "duetime_attempts_closed_total"
        assert after.value(closed, outcome="SUCCEEDED", closed_by="worker") == 1
        assert after.value(closed, outcome="FAILED", closed_by="worker") == 1
        assert after.value(closed) == 2
        lateness = "duetime_run_start_lateness_seconds"
        for reference in ("effective", "nominal"):
            assert after.value(f"{lateness}_count", reference=reference) == 2
            # Both started within a minute of their time (the promise is 5 s; a busy test
            # machine gets slack), and never before it.
            assert after.value(f"{lateness}_bucket", reference=reference, le="60.0") == 2
            assert after.value(f"{lateness}_sum", reference=reference) >= 0
        refusals = "duetime_fencing_refusals_total"
        assert after.value(refusals, operation="complete", check="attempt") == 1
        assert after.value(refusals) == 1
        assert after.value("duetime_attempt_lease_expiries_total") == 0
        assert after.value("duetime_partitions_lost_total") == 0

        # The relay published both dispatches and the dead-letter event: its outbox is empty.
        await eventually(
            scraped(
                relay,
                lambda s: (
                    bool(s.find("duetime_outbox_depth"))
                    and s.value("duetime_outbox_depth") == 0
                    and s.value("duetime_outbox_oldest_age_seconds") == 0
                ),
            ),
            within=20,
            what="the relay reports an empty outbox",
        )
        # The worker took both messages: no lag on any dispatch topic it reads.
        await eventually(
            scraped(
                worker,
                lambda s: all(
                    len(s.find("duetime_consumer_lag", topic=topic)) == 1
                    and s.value("duetime_consumer_lag", topic=topic) == 0
                    for topic in DISPATCH_TOPICS.values()
                ),
            ),
            within=20,
            what="the worker reports no lag on the dispatch topics",
        )
        # The API records none of these; its endpoint serves the process's own metrics.
        assert (await scrape(api)).value("process_cpu_seconds_total") > 0
        assert after.find("target_info", service_name="duetime-scheduler")
