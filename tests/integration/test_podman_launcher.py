"""The podman launcher on the real runtime (podman + runc): the task's environment (run key,
attempt, trace context, deadline, the target's env with awkward values), the image's
entrypoint and CMD replaced as Kubernetes does, exit status as outcome, the timeout's stop
then kill, refusals (image not permitted, short name, missing, command not found), the bound
on containers at once, a cancelled launch killing its container, and orphans of a worker
killed with -9 swept by the next one. No container outlives its launch."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
import uvloop

from duetime.jobs.v1 import job_pb2
from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_core.records import AttemptOutcome
from duetime_worker.attempt.wire import target_run
from duetime_worker.targets.container import orphans
from duetime_worker.targets.container.images import ImagePolicy
from duetime_worker.targets.container.podman import PodmanLauncher, PodmanSettings
from duetime_worker.targets.container.podman_commands import Podman
from duetime_worker.targets.outcome import LeaseLapsed
from duetime_worker.targets.run import ContainerTask, TargetRun
from testkit.http_target import Behaviour, HttpTarget, http_target
from testkit.podman import containers, containers_of_run, task_image
from testkit.polling import eventually

pytestmark = pytest.mark.timeout(60)

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
# The task posts what it sees to the test's HTTP server on the host's loopback.
SETTINGS = PodmanSettings(network="host", stop_seconds=2, sweep_interval=3600)


@pytest.fixture(scope="module")
def image() -> str:
    return task_image()


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with http_target() as server:
        yield server


def launcher(settings: PodmanSettings = SETTINGS, worker: str = "w-podman") -> PodmanLauncher:
    return PodmanLauncher(settings, ImagePolicy(("localhost/duetime-test-*",)), worker)


run_numbers = iter(range(1, 1_000_000))


def spec(
    image: str,
    script: str | None = None,
    *,
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> TargetRun:
    command = ("sh", "-c", script) if script is not None else ()
    return target_run(
        pb.RunSpec(
            run_id=f"{os.getpid()}-{time.monotonic_ns()}-{next(run_numbers)}",
            idempotency_key="job-9/2026-03-01T00:00:00Z",
            traceparent=TRACEPARENT,
            target=job_pb2.Target(
                container=job_pb2.ContainerTarget(
                    image=image, command=command, args=args, env=env or {}
                )
            ),
        )
    )


def report(url: str) -> str:
    """Shell that posts the task's environment to ``url``."""
    return f"env > /tmp/env && wget -q -O /dev/null --post-file /tmp/env {url}"


def seen_env(target: HttpTarget, path: str) -> dict[str, str]:
    (call,) = target.calls_to(path)
    lines = call.body.decode().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


async def test_the_task_sees_its_run_key_attempt_trace_deadline_and_env(
    image: str, target: HttpTarget
) -> None:
    url = target.on("/env", Behaviour())
    awkward = "x y \"quoted\" = 'single' $HOME `tick` \\ é"
    run = spec(image, report(url), env={"GREETING": "hi", "AWKWARD": awkward})
    before = datetime.now(UTC)
    outcome = await launcher().launch(run, 4, 30)
    assert (outcome.result, outcome.error) == (AttemptOutcome.SUCCEEDED, "")
    env = seen_env(target, "/env")
    assert env["DUETIME_IDEMPOTENCY_KEY"] == "job-9/2026-03-01T00:00:00Z"
    assert env["DUETIME_ATTEMPT"] == "4"
    assert env["TRACEPARENT"] == TRACEPARENT
    assert (env["GREETING"], env["AWKWARD"]) == ("hi", awkward)
    deadline = datetime.fromisoformat(env["DUETIME_DEADLINE"])
    assert env["DUETIME_DEADLINE"].endswith("Z")
    assert before + timedelta(seconds=29) < deadline <= datetime.now(UTC) + timedelta(seconds=30)
    assert 25 < float(env["DUETIME_DEADLINE_SECONDS"]) <= 30
    # Nothing of the worker's own environment (its token) reaches the task.
    assert not {k for k in env if k.startswith("DUETIME_WORKER")}
    assert await containers_of_run(run.run_id) == []


async def test_command_replaces_the_entrypoint_and_args_the_cmd(
    image: str, target: HttpTarget
) -> None:
    # The image's CMD exits 4: it runs when the target gives neither command nor args.
    outcome = await launcher().launch(spec(image), 1, 30)
    assert (outcome.result, outcome.error) == (AttemptOutcome.FAILED, "exited with status 4")
    url = target.on("/args", Behaviour())
    run = spec(image, 'wget -q -O /dev/null --post-data "$0 $1" ' + url, args=("one", "two"))
    outcome = await launcher().launch(run, 1, 30)
    assert outcome.result == AttemptOutcome.SUCCEEDED
    assert target.calls_to("/args")[0].body == b"one two"


async def test_a_nonzero_exit_is_a_retryable_failure(image: str) -> None:
    run = spec(image, "exit 3")
    outcome = await launcher().launch(run, 1, 30)
    assert (outcome.result, outcome.retryable) == (AttemptOutcome.FAILED, True)
    assert outcome.error == "exited with status 3"
    assert await containers_of_run(run.run_id) == []


def test_a_long_task_starts_beside_others_under_uvloop(image: str) -> None:
    """The services run on uvloop, whose spawns can leave a concurrent command's pipe to a
    container's monitor: the long task's start must not wait for the others' lives."""

    async def both() -> list[AttemptOutcome | str]:
        beside = launcher().launch(spec(image, "sleep 6"), 1, 30)
        long = launcher().launch(spec(image, "exec sleep 300"), 1, 4)
        done = await asyncio.gather(beside, long)
        return [done[0].result, done[1].error]

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        beside, long = runner.run(both())
    assert beside == AttemptOutcome.SUCCEEDED
    assert "stopped at the 4 s timeout" in str(long), long


async def test_the_timeout_stops_the_task_then_kills_it(image: str, target: HttpTarget) -> None:
    # The task notes the stop signal, then ignores it: SIGKILL comes stop_seconds later.
    url = target.on("/term", Behaviour())
    script = f"trap 'wget -q -O /dev/null {url}' TERM; while true; do sleep 0.1; done"
    run = spec(image, script)
    started = time.monotonic()
    outcome = await launcher().launch(run, 1, 1.5)
    took = time.monotonic() - started
    assert outcome.result == AttemptOutcome.TIMED_OUT, outcome
    assert "stopped at the 1.5 s timeout (killed" in outcome.error
    assert len(target.calls_to("/term")) == 1
    # The timeout, then the 2 s grace, then the removal.
    assert 1.5 + 2 <= took < 1.5 + 2 + 5, took
    assert await containers_of_run(run.run_id) == []


async def test_a_task_that_stops_on_the_signal_is_not_killed(image: str) -> None:
    run = spec(image, "trap 'exit 0' TERM; while true; do sleep 0.1; done")
    started = time.monotonic()
    outcome = await launcher().launch(run, 1, 1)
    assert outcome.result == AttemptOutcome.TIMED_OUT
    assert "(exited with status 0;" in outcome.error
    assert time.monotonic() - started < 1 + 2
    assert await containers_of_run(run.run_id) == []


@pytest.mark.parametrize(
    ("refused", "reason"),
    [
        ("docker.io/library/busybox:1", "is not permitted on this worker"),
        ("duetime-test-task:1", "must name its registry"),
        ("localhost/duetime-test-missing:1", "is not on this worker"),
    ],
)
async def test_images_that_cannot_run_are_non_retryable_failures(
    image: str, refused: str, reason: str
) -> None:
    run = spec(refused, "exit 0")
    outcome = await launcher().launch(run, 1, 30)
    assert (outcome.result, outcome.retryable) == (AttemptOutcome.FAILED, False)
    assert reason in outcome.error, outcome.error
    assert await containers_of_run(run.run_id) == []


async def test_a_command_missing_from_the_image_is_a_non_retryable_failure(image: str) -> None:
    run = replace(spec(image, None), target=ContainerTask(image, ("/no/such/program",)))
    outcome = await launcher().launch(run, 1, 30)
    assert (outcome.result, outcome.retryable) == (AttemptOutcome.FAILED, False)
    assert "cannot run the command" in outcome.error, outcome.error
    assert await containers_of_run(run.run_id) == []


async def test_no_more_containers_run_at_once_than_the_bound(
    image: str, target: HttpTarget
) -> None:
    start, end = target.on("/turn/start", Behaviour()), target.on("/turn/end", Behaviour())
    bounded = launcher(PodmanSettings(network="host", concurrency=1))
    script = f"wget -q -O /dev/null {start}; sleep 0.3; wget -q -O /dev/null {end}"

    async def reserved() -> AttemptOutcome:
        outcome = await bounded.launch(spec(image, script), 1, 30, await bounded.reserve())
        return outcome.result

    outcomes = await asyncio.gather(*(reserved() for _ in range(3)))
    assert outcomes == [AttemptOutcome.SUCCEEDED] * 3
    # Never two started before one ended.
    marks = [call.path for call in target.calls]
    assert marks == ["/turn/start", "/turn/end"] * 3, marks


async def test_a_cancelled_launch_kills_its_container_at_once(image: str) -> None:
    run = spec(image, "sleep 300")
    launching = asyncio.create_task(launcher().launch(run, 1, 300))

    async def running() -> bool:
        found = await containers_of_run(run.run_id)
        return bool(found) and found[0]["State"] == "running"

    await eventually(running, 20, "the container runs")
    cancelled = time.monotonic()
    launching.cancel()
    with pytest.raises(asyncio.CancelledError):
        await launching
    # Killed, not stopped: no stop grace waited for.
    assert time.monotonic() - cancelled < 2, time.monotonic() - cancelled
    assert await containers_of_run(run.run_id) == []


ORPHAN_MAKER = """
import asyncio, sys
from duetime_worker.targets.container.images import ImagePolicy
from duetime_worker.targets.container.podman import PodmanLauncher, PodmanSettings
from duetime_worker.targets.run import ContainerTask, TargetRun

task = ContainerTask(image=sys.argv[2], command=("sleep", "300"))
run = TargetRun(run_id=sys.argv[1], target=task, idempotency_key="k")
launcher = PodmanLauncher(PodmanSettings(), ImagePolicy(("localhost/*",)), sys.argv[3])
asyncio.run(launcher.launch(run, 1, 300))
"""


async def orphan_of_a_killed_worker(image: str, worker: str) -> str:
    """A run whose container runs on after its worker process was killed with -9."""
    run_id = spec(image).run_id
    maker = await asyncio.create_subprocess_exec(
        sys.executable, "-c", ORPHAN_MAKER, run_id, image, worker
    )

    async def running() -> bool:
        found = await containers_of_run(run_id)
        return bool(found) and found[0]["State"] == "running"

    try:
        await eventually(running, 20, "the worker's container runs")
    finally:
        maker.send_signal(signal.SIGKILL)
        await maker.wait()
    assert await containers_of_run(run_id), "the container outlived its worker"
    return run_id


async def test_the_next_worker_removes_the_containers_of_a_worker_killed_with_9(
    image: str,
) -> None:
    run_id = await orphan_of_a_killed_worker(image, "w-victim")
    # Another worker on this host sweeps at its start, whatever its id.
    survivor = launcher(worker="w-next")
    await survivor.start()
    try:
        assert await containers_of_run(run_id) == []
    finally:
        await survivor.close()


async def test_a_live_workers_containers_are_left_alone_by_sweeps(image: str) -> None:
    run = spec(image, "sleep 300")
    owner = launcher(worker="w-owner")
    launching = asyncio.create_task(owner.launch(run, 1, 300))
    try:

        async def running() -> bool:
            return bool(await containers_of_run(run.run_id))

        await eventually(running, 20, "the container runs")
        # A peer's sweep, and one at the start of a worker with the same id in this process
        # (its owner is this live process): neither removes it.
        peer = launcher(worker="w-peer")
        await peer.start()
        await peer.close()
        same_id = orphans.Owner.of_this_process("w-owner")
        assert await orphans.Sweeper(Podman("podman"), same_id).sweep(at_start=True) == []
        labels = (await containers_of_run(run.run_id))[0]["Labels"]
        assert labels[orphans.WORKER] == "w-owner"
        assert labels[orphans.ATTEMPT] == "1"
    finally:
        launching.cancel()
        with pytest.raises(asyncio.CancelledError):
            await launching
    assert await containers(orphans.WORKER, "w-owner") == []


async def test_a_registry_that_cannot_be_reached_is_a_retryable_failure() -> None:
    # Pulled when missing, from a registry that refuses connections: it may answer later.
    pulling = PodmanLauncher(PodmanSettings(pull="missing"), ImagePolicy(("localhost:1/*",)), "w")
    run = spec("localhost:1/duetime-test-task:1", "exit 0")
    outcome = await pulling.launch(run, 1, 30)
    assert (outcome.result, outcome.retryable) == (AttemptOutcome.FAILED, True)
    assert outcome.error.startswith("podman could not start the container: "), outcome.error
    assert "localhost:1" in outcome.error
    assert await containers_of_run(run.run_id) == []


async def test_a_podman_that_cannot_run_stops_the_start_and_fails_launches(image: str) -> None:
    broken = launcher(PodmanSettings(command="/nonexistent/podman"))
    with pytest.raises(RuntimeError, match="DUETIME_PODMAN_COMMAND='/nonexistent/podman'"):
        await broken.start()
    outcome = await broken.launch(spec(image, "exit 0"), 1, 30)
    assert (outcome.result, outcome.retryable) == (AttemptOutcome.FAILED, True)
    assert outcome.error.startswith("cannot run podman: "), outcome.error


async def test_a_task_whose_lease_lapsed_before_its_start_never_runs(
    image: str, target: HttpTarget
) -> None:
    # The check comes after the create (and any pull), immediately before the start.
    url = target.on("/ran", Behaviour())
    run = spec(image, f"wget -q -O /dev/null {url}")
    checked: list[int] = []

    def lapsed(within: float = 0.0) -> None:
        checked.append(len(target.calls))
        raise LeaseLapsed

    with pytest.raises(LeaseLapsed):
        await launcher().launch(run, 1, 30, check=lapsed)
    assert checked == [0]
    assert await containers_of_run(run.run_id) == []  # created, then removed unstarted
    outcome = await launcher().launch(run, 2, 30)
    assert outcome.result == AttemptOutcome.SUCCEEDED
    assert len(target.calls_to("/ran")) == 1
