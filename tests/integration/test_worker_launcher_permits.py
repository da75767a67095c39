"""Container attempts and the local launcher's permits, through the executor against an
in-process WorkerService on real PostgreSQL: a dispatch that says its target is a container
waits for a permit before its attempt is started, so a burst larger than the launcher's bound
runs in turn, none timing out while it waits."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from duetime.jobs.v1 import job_pb2
from duetime_worker.attempt.executor import Executor
from duetime_worker.intake.dispatch import Dispatch
from duetime_worker.targets.container.launcher import LocalProcessLauncher
from testkit.api import ApiClient, running_api
from testkit.executor import worker_machinery
from testkit.worker_api import WorkerClient, create_job, job_message, running_worker_api

pytestmark = pytest.mark.timeout(60)

RUN_SECONDS = 1.0
# Longer than one process, shorter than waiting for two others before running.
TIMEOUT = timedelta(seconds=1.5)


def noop() -> None:
    pass


@pytest.fixture
async def env(db_dsn: str) -> AsyncIterator[tuple[ApiClient, WorkerClient, Executor]]:
    async with (
        running_api(db_dsn) as api,
        running_worker_api(db_dsn) as w,
        worker_machinery(w) as machinery,
    ):
        yield api, w, machinery.executor(LocalProcessLauncher(["sh"], concurrency=1))


async def test_container_attempts_beyond_the_launcher_bound_start_in_turn(
    env: tuple[ApiClient, WorkerClient, Executor],
) -> None:
    api, w, executor = env
    job = job_message(attempt_timeout=TIMEOUT)
    job.target.container.CopyFrom(
        job_pb2.ContainerTarget(image="unused:1", command=["sh", "-c", f"sleep {RUN_SECONDS}"])
    )
    jobs = [await create_job(api, job) for _ in range(3)]
    now = await w.now()
    runs = [await w.queue_scheduled_run(j.job_id, now) for j in jobs]
    await asyncio.gather(
        *(executor.process(Dispatch(run_id=str(r), container=True), f"d-{r}", noop) for r in runs)
    )
    assert [(await w.run_row(r))["state"] for r in runs] == ["SUCCEEDED"] * 3
    # Each started once its turn came: the attempts do not overlap.
    starts = sorted([(await w.attempts(r))[0]["start_time"] for r in runs])
    assert all(b - a >= timedelta(seconds=RUN_SECONDS) for a, b in itertools.pairwise(starts))
