"""Container jobs through the four services as processes, the workers running them with the
podman launcher on the real runtime (podman + runc), each task reporting what it sees to a
real HTTP target on the host's loopback:

- a run executes in a container with its run key, attempt, trace context and deadline in its
  environment, and a container running past the attempt lease is kept alive by heartbeats;
- a failing exit is retried and the next attempt succeeds; the timeout stops the container and
  the run is dead-lettered TIMED_OUT; a missing image is dead-lettered after one attempt,
  non-retryable, with the reason;
- a worker killed with -9 mid-run: a peer's sweep removes the orphan before the attempt's lease
  has expired, and the peer runs the retry;
- a worker stopped with SIGTERM hands the attempt back and removes its container before it
  exits; a worker cut off from the scheduler kills its container when its lease lapses.

No container of any run outlives its attempt.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from duetime.jobs.v1 import job_pb2, run_pb2
from testkit.http_target import Behaviour, HttpTarget, http_target
from testkit.podman import containers_of_run, task_image
from testkit.polling import eventually
from testkit.system import System, http_job, running_system

pytestmark = pytest.mark.timeout(150)

SHORT_LEASE = {"DUETIME_ATTEMPT_LEASE": "4"}
PODMAN_WORKERS = {
    "DUETIME_CONTAINER_LAUNCHER": "podman",
    "DUETIME_CONTAINER_IMAGES": "localhost/duetime-test-*",
    "DUETIME_PODMAN_NETWORK": "host",
    "DUETIME_PODMAN_STOP_SECONDS": "1",
    "DUETIME_PODMAN_SWEEP_SECONDS": "1",
    "DUETIME_HEARTBEAT_INTERVAL": "0.5",
}
SUCCEEDED = run_pb2.ATTEMPT_OUTCOME_SUCCEEDED
FAILED = run_pb2.ATTEMPT_OUTCOME_FAILED
LEASE_EXPIRED = run_pb2.ATTEMPT_OUTCOME_LEASE_EXPIRED
HANDED_BACK = run_pb2.ATTEMPT_OUTCOME_HANDED_BACK
# The task posts its environment to ``url``.
REPORT = "env > /tmp/env && wget -q -O /dev/null --post-file /tmp/env {url}"
# Attempt 1 runs until it is stopped; the later ones succeed at once.
FIRST_HANGS = '[ "$DUETIME_ATTEMPT" -ge 2 ] || exec sleep 300'


@pytest.fixture(scope="module")
def image() -> str:
    return task_image()


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with http_target() as server:
        yield server


def container_job(
    name: str,
    image: str,
    script: str,
    *,
    max_attempts: int = 3,
    attempt_timeout: timedelta = timedelta(seconds=30),
) -> job_pb2.Job:
    """A one-off job due in a second whose target runs ``script`` in ``image``."""
    job = http_job(
        name,
        "http://unused.invalid/",
        at=datetime.now(UTC) + timedelta(seconds=1),
        max_attempts=max_attempts,
        attempt_timeout=attempt_timeout,
    )
    job.target.container.CopyFrom(
        job_pb2.ContainerTarget(image=image, command=["sh", "-c", script])
    )
    return job


async def only_run(system: System, job: job_pb2.Job) -> run_pb2.Run:
    (run,) = await system.api.runs(job)
    return run


def finished(system: System, job: job_pb2.Job, state: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        runs = await system.api.runs(job)
        return len(runs) == 1 and runs[0].state == state

    return check


async def running_container(system: System, job: job_pb2.Job) -> dict[str, Any]:
    """The job's one run's container, once it runs."""
    found: list[dict[str, Any]] = []

    async def runs() -> bool:
        listed = await system.api.runs(job)
        if listed:
            found[:] = await containers_of_run(listed[0].run_id)
        return bool(found) and found[0]["State"] == "running"

    await eventually(runs, 30, f"{job.display_name}: its container runs")
    return found[0]


async def gone_at(run_id: str, within: float) -> datetime:
    """When (at the latest) no container of the run was left."""

    async def none_left() -> bool:
        return not await containers_of_run(run_id)

    await eventually(none_left, within, f"the containers of run {run_id} removed")
    return datetime.now(UTC)


def env_seen(target: HttpTarget, path: str) -> dict[str, str]:
    (call,) = target.calls_to(path)
    return dict(line.split("=", 1) for line in call.body.decode().splitlines() if "=" in line)


async def test_container_jobs_run_retry_time_out_and_dead_letter(
    db_dsn: str, target: HttpTarget, image: str
) -> None:
    began = time.monotonic()
    async with running_system(
        db_dsn, scheduler_extra=SHORT_LEASE, worker_extra=PODMAN_WORKERS
    ) as system:
        api = system.api
        # Runs past the 4 s lease, then reports.
        reports = await api.create(
            container_job(
                "reports", image, "sleep 6; " + REPORT.format(url=target.on("/env", Behaviour()))
            )
        )
        flaky = await api.create(
            container_job("flaky", image, '[ "$DUETIME_ATTEMPT" -ge 2 ] || exit 3')
        )
        slow = await api.create(
            container_job(
                "slow",
                image,
                "exec sleep 300",
                max_attempts=1,
                # Room for podman to create and start it beside three others on a busy machine.
                attempt_timeout=timedelta(seconds=8),
            )
        )
        missing = await api.create(
            container_job("missing", "localhost/duetime-test-missing:1", "exit 0")
        )
        for job, state in (
            (flaky, run_pb2.RUN_STATE_SUCCEEDED),
            (slow, run_pb2.RUN_STATE_DEAD_LETTERED),
            (missing, run_pb2.RUN_STATE_DEAD_LETTERED),
            (reports, run_pb2.RUN_STATE_SUCCEEDED),
        ):
            await eventually(finished(system, job, state), 60, f"{job.display_name} finished")

        run = await only_run(system, reports)
        assert [(a.number, a.outcome, a.worker) for a in run.attempts] == [(1, SUCCEEDED, "w1")]
        attempt = run.attempts[0]
        assert attempt.end_time.ToDatetime(UTC) - attempt.start_time.ToDatetime(UTC) > timedelta(
            seconds=6
        ), "ran past the 4 s lease, one attempt: its lease was renewed"
        env = env_seen(target, "/env")
        assert env["DUETIME_IDEMPOTENCY_KEY"] == run.idempotency_key
        assert env["DUETIME_ATTEMPT"] == "1"
        assert run.trace_id in env["TRACEPARENT"]
        deadline = datetime.fromisoformat(env["DUETIME_DEADLINE"])
        start = attempt.start_time.ToDatetime(UTC)
        assert start + timedelta(seconds=29) < deadline <= start + timedelta(seconds=31)
        assert 20 < float(env["DUETIME_DEADLINE_SECONDS"]) <= 30

        run = await only_run(system, flaky)
        assert [(a.outcome, a.error) for a in run.attempts] == [
            (FAILED, "exited with status 3"),
            (SUCCEEDED, ""),
        ]
        (timed_out,) = (await only_run(system, slow)).attempts
        assert timed_out.outcome == run_pb2.ATTEMPT_OUTCOME_TIMED_OUT
        assert "stopped at the 8 s timeout" in timed_out.error
        (refused,) = (await only_run(system, missing)).attempts
        assert refused.outcome == FAILED
        assert "'localhost/duetime-test-missing:1' is not on this worker" in refused.error
        for job in (reports, flaky, slow, missing):
            assert await containers_of_run((await only_run(system, job)).run_id) == []
    print(f"container jobs end to end in {time.monotonic() - began:.1f} s")


async def test_a_worker_killed_with_9_leaves_no_container_behind(db_dsn: str, image: str) -> None:
    async with running_system(
        db_dsn, workers=2, scheduler_extra=SHORT_LEASE, worker_extra=PODMAN_WORKERS
    ) as system:
        job = await system.api.create(container_job("killed", image, FIRST_HANGS))
        container = await running_container(system, job)
        victim = container["Labels"]["dev.duetime.worker-id"]
        (survivor,) = set(system.workers) - {victim}
        system.workers[victim].process.kill()
        killed = time.monotonic()
        run_id = container["Labels"]["dev.duetime.run-id"]
        removed = await gone_at(run_id, 20)
        print(f"orphan removed {time.monotonic() - killed:.1f} s after the kill -9")
        await eventually(finished(system, job, run_pb2.RUN_STATE_SUCCEEDED), 60, "retried")
        run = await only_run(system, job)
        assert [(a.number, a.outcome, a.worker) for a in run.attempts] == [
            (1, LEASE_EXPIRED, victim),
            (2, SUCCEEDED, survivor),
        ]
        # The survivor swept it before the scheduler closed the attempt (one machine's clock).
        assert removed <= run.attempts[0].end_time.ToDatetime(UTC) + timedelta(seconds=0.5)
        assert await containers_of_run(run_id) == []


async def test_a_stopping_worker_hands_back_and_removes_its_container(
    db_dsn: str, image: str
) -> None:
    async with running_system(db_dsn, workers=2, worker_extra=PODMAN_WORKERS) as system:
        job = await system.api.create(container_job("deploy", image, FIRST_HANGS))
        container = await running_container(system, job)
        stopping_id = container["Labels"]["dev.duetime.worker-id"]
        (other_id,) = set(system.workers) - {stopping_id}
        stopping = system.workers[stopping_id].process
        stopping.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(stopping.wait(), 30) == 0
        run_id = container["Labels"]["dev.duetime.run-id"]
        # Gone by the time its worker exited (another worker may be running attempt 2's).
        assert container["Id"] not in [c["Id"] for c in await containers_of_run(run_id)]
        await eventually(finished(system, job, run_pb2.RUN_STATE_SUCCEEDED), 60, "run again")
        run = await only_run(system, job)
        assert [(a.number, a.outcome, a.worker) for a in run.attempts] == [
            (1, HANDED_BACK, stopping_id),
            (2, SUCCEEDED, other_id),
        ]
        assert await containers_of_run(run_id) == []


async def test_a_worker_cut_off_from_the_scheduler_kills_its_container_at_its_lease(
    db_dsn: str, image: str
) -> None:
    async with running_system(
        db_dsn, scheduler_extra=SHORT_LEASE, worker_extra=PODMAN_WORKERS
    ) as system:
        job = await system.api.create(container_job("cut off", image, FIRST_HANGS))
        container = await running_container(system, job)
        run_id = container["Labels"]["dev.duetime.run-id"]
        scheduler = system.scheduler.process
        scheduler.send_signal(signal.SIGSTOP)
        frozen = time.monotonic()
        try:
            await gone_at(run_id, 20)
            took = time.monotonic() - frozen
        finally:
            scheduler.send_signal(signal.SIGCONT)
        print(f"container killed {took:.1f} s after the scheduler froze (lease 4 s)")
        assert took < 4 + 2, took
        await eventually(finished(system, job, run_pb2.RUN_STATE_SUCCEEDED), 60, "run again")
        run = await only_run(system, job)
        assert [(a.number, a.outcome) for a in run.attempts] == [(1, LEASE_EXPIRED), (2, SUCCEEDED)]
        assert await containers_of_run(run_id) == []
