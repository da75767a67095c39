"""The four services as separate processes (api, scheduler, relay, worker) on a fresh database,
real etcd and Kafka, and a real HTTP target that records every call: jobs created through the
API run at their time and never before, failures are retried, and exhausted runs are
dead-lettered.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from duetime.jobs.v1 import job_pb2, run_pb2
from tests.support.fleet import eventually
from tests.support.http_target import Behaviour, HttpTarget, http_target
from tests.support.system import http_job, running_system

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]

# The target's receive time and the run's effective time come from two clocks of this machine
# (the host's and PostgreSQL's), read at microsecond resolution.
CLOCK_SLACK = timedelta(milliseconds=5)


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with http_target() as server:
        yield server


async def test_jobs_run_on_time_retry_and_dead_letter(db_dsn: str, target: HttpTarget) -> None:
    began = time.monotonic()
    async with running_system(db_dsn) as system:
        print(f"four services up in {time.monotonic() - began:.1f} s")
        api = system.api
        worker = system.workers["w1"]
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
            succeeded = [r for r in await api.runs(job) if r.state == run_pb2.RUN_STATE_SUCCEEDED]
            assert succeeded
            for run in succeeded:
                call = calls[run.idempotency_key]
                effective = run.effective_time.ToDatetime(UTC)
                assert call.time >= effective - CLOCK_SLACK, (call.time, effective)
                assert call.headers["Duetime-Attempt"] == str(run.attempt)
                assert call.headers["traceparent"]
                assert [a.outcome for a in run.attempts] == [run_pb2.ATTEMPT_OUTCOME_SUCCEEDED]
                assert run.attempts[0].worker == "w1"
            lateness = [
                (calls[r.idempotency_key].time - r.effective_time.ToDatetime(UTC)).total_seconds()
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
    assert worker.process.returncode == 0, "\n".join(worker.output[-30:])
    print(f"end to end in {time.monotonic() - began:.1f} s")
