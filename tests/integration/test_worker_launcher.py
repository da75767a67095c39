"""The local-process launcher for container targets: the run's environment (its trace context
included), the kill at the timeout, its bound on processes at once, and its being off unless
the operator permits commands."""

from __future__ import annotations

import asyncio
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from duetime.jobs.v1 import job_pb2
from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_core.records import AttemptOutcome
from duetime_worker.__main__ import launcher_for
from duetime_worker.attempt.wire import target_run
from duetime_worker.config import Settings
from duetime_worker.targets.container.launcher import (
    LAUNCHER_BUSY,
    DisabledLauncher,
    LocalProcessLauncher,
)
from duetime_worker.targets.outcome import LeaseLapsed
from duetime_worker.targets.run import TargetRun

pytestmark = pytest.mark.timeout(30)


TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def spec(*command: str, env: dict[str, str] | None = None) -> TargetRun:
    return target_run(
        pb.RunSpec(
            idempotency_key="job-9/2026-03-01T00:00:00Z",
            traceparent=TRACEPARENT,
            target=job_pb2.Target(
                container=job_pb2.ContainerTarget(image="unused:1", command=command, env=env or {})
            ),
        )
    )


async def test_the_process_sees_the_run_key_attempt_deadline_and_target_env(
    tmp_path: Path,
) -> None:
    out = tmp_path / "env.txt"
    script = (
        'echo "$DUETIME_IDEMPOTENCY_KEY|$DUETIME_ATTEMPT|$GREETING|$DUETIME_DEADLINE|'
        f'$DUETIME_DEADLINE_SECONDS" > {out}'
    )
    before = datetime.now(UTC)
    outcome = await LocalProcessLauncher(["sh"]).launch(
        spec("sh", "-c", script, env={"GREETING": "hi"}), 4, 10
    )
    assert outcome.result == AttemptOutcome.SUCCEEDED
    key, attempt, greeting, deadline, seconds = out.read_text().strip().split("|")
    assert (key, attempt, greeting) == ("job-9/2026-03-01T00:00:00Z", "4", "hi")
    assert (
        before + timedelta(seconds=9)
        < datetime.fromisoformat(deadline)
        <= before + timedelta(seconds=11)
    )
    assert 9 < float(seconds) <= 10


async def test_the_process_gets_the_trace_context_to_join(tmp_path: Path) -> None:
    out = tmp_path / "traceparent.txt"
    outcome = await LocalProcessLauncher(["sh"]).launch(
        spec("sh", "-c", f'echo "$TRACEPARENT" > {out}'), 1, 10
    )
    assert outcome.result == AttemptOutcome.SUCCEEDED
    # Tracing is off here: the run's own context (with it on, the target call's span).
    assert out.read_text().strip() == TRACEPARENT


async def test_no_more_processes_run_at_once_than_the_bound(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    # Fails if another process holds the lock directory: two running at once.
    script = f"mkdir {lock} || exit 7; sleep 0.2; rmdir {lock}"
    launcher = LocalProcessLauncher(["sh"], concurrency=1)

    async def reserved() -> AttemptOutcome:
        outcome = await launcher.launch(spec("sh", "-c", script), 1, 10, await launcher.reserve())
        return outcome.result

    outcomes = await asyncio.gather(*(reserved() for _ in range(3)))
    assert outcomes == [AttemptOutcome.SUCCEEDED] * 3


async def test_a_nonzero_exit_is_a_retryable_failure() -> None:
    outcome = await LocalProcessLauncher(["sh"]).launch(spec("sh", "-c", "exit 3"), 1, 10)
    assert outcome.result == AttemptOutcome.FAILED
    assert outcome.retryable
    assert "status 3" in outcome.error


async def test_the_process_is_killed_at_the_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    started = time.monotonic()
    outcome = await LocalProcessLauncher(["sh"]).launch(
        spec("sh", "-c", f"echo $$ > {pid_file}; exec sleep 30"), 1, 0.5
    )
    assert time.monotonic() - started < 5
    assert outcome.result == AttemptOutcome.TIMED_OUT
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_unlisted_commands_are_refused() -> None:
    outcome = await LocalProcessLauncher(["true"]).launch(spec("sh", "-c", "exit 0"), 1, 10)
    assert outcome.result == AttemptOutcome.FAILED
    assert not outcome.retryable
    assert "not permitted" in outcome.error


async def test_container_targets_are_off_by_default() -> None:
    env = {"DUETIME_WORKER_TOKEN": "dtw_x", "DUETIME_PLAINTEXT": "all"}
    launcher = launcher_for(Settings.from_env(env))
    assert isinstance(launcher, DisabledLauncher)
    outcome = await launcher.launch(spec("true"), 1, 10)
    assert outcome.result == AttemptOutcome.FAILED
    assert not outcome.retryable
    assert "DUETIME_CONTAINER_LAUNCHER is off" in outcome.error


def test_permitted_commands_alone_still_choose_the_local_launcher() -> None:
    env = {
        "DUETIME_WORKER_TOKEN": "dtw_x",
        "DUETIME_LOCAL_LAUNCHER_COMMANDS": "sh",
        "DUETIME_PLAINTEXT": "all",
    }
    assert isinstance(launcher_for(Settings.from_env(env)), LocalProcessLauncher)


async def test_a_launch_without_a_reservation_is_handed_back_while_every_permit_is_taken() -> None:
    launcher = LocalProcessLauncher(["sh"], concurrency=1)
    reservation = await launcher.reserve()
    outcome = await launcher.launch(spec("sh", "-c", "exit 0"), 1, 10)
    assert (outcome.result, outcome.error) == (AttemptOutcome.HANDED_BACK, LAUNCHER_BUSY)
    # A launch with the reservation runs, and gives the permit back.
    outcome = await launcher.launch(spec("sh", "-c", "exit 0"), 1, 10, reservation)
    assert outcome.result == AttemptOutcome.SUCCEEDED
    outcome = await launcher.launch(spec("sh", "-c", "exit 0"), 1, 10)
    assert outcome.result == AttemptOutcome.SUCCEEDED


async def test_a_process_whose_lease_lapsed_is_never_started(tmp_path: Path) -> None:
    ran = tmp_path / "ran"

    def lapsed(within: float = 0.0) -> None:
        raise LeaseLapsed

    launcher = LocalProcessLauncher(["touch"])
    with pytest.raises(LeaseLapsed):
        await launcher.launch(spec("touch", str(ran)), 1, 10, check=lapsed)
    assert not ran.exists()
    assert (await launcher.launch(spec("touch", str(ran)), 2, 10)).result == (
        AttemptOutcome.SUCCEEDED
    )
    assert ran.exists()
