"""The local-process launcher for container targets: the run's environment, the kill at the
timeout, and its being off unless the operator permits commands."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from duetime.jobs.v1 import job_pb2
from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_worker.container import DisabledLauncher, LocalProcessLauncher, launcher_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(30)]


def spec(*command: str, env: dict[str, str] | None = None) -> pb.RunSpec:
    return pb.RunSpec(
        idempotency_key="job-9/2026-03-01T00:00:00Z",
        target=job_pb2.Target(
            container=job_pb2.ContainerTarget(image="unused:1", command=command, env=env or {})
        ),
    )


async def test_the_process_sees_the_run_key_attempt_and_target_env(tmp_path: Path) -> None:
    out = tmp_path / "env.txt"
    script = f'echo "$DUETIME_IDEMPOTENCY_KEY|$DUETIME_ATTEMPT|$GREETING" > {out}'
    outcome = await LocalProcessLauncher(["sh"]).launch(
        spec("sh", "-c", script, env={"GREETING": "hi"}), 4, 10
    )
    assert outcome.result == pb.ATTEMPT_RESULT_SUCCEEDED
    assert out.read_text().strip() == "job-9/2026-03-01T00:00:00Z|4|hi"


async def test_a_nonzero_exit_is_a_retryable_failure() -> None:
    outcome = await LocalProcessLauncher(["sh"]).launch(spec("sh", "-c", "exit 3"), 1, 10)
    assert outcome.result == pb.ATTEMPT_RESULT_FAILED
    assert outcome.retryable
    assert "status 3" in outcome.error


async def test_the_process_is_killed_at_the_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    started = time.monotonic()
    outcome = await LocalProcessLauncher(["sh"]).launch(
        spec("sh", "-c", f"echo $$ > {pid_file}; exec sleep 30"), 1, 0.5
    )
    assert time.monotonic() - started < 5
    assert outcome.result == pb.ATTEMPT_RESULT_TIMED_OUT
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_unlisted_commands_are_refused() -> None:
    outcome = await LocalProcessLauncher(["true"]).launch(spec("sh", "-c", "exit 0"), 1, 10)
    assert outcome.result == pb.ATTEMPT_RESULT_FAILED
    assert not outcome.retryable
    assert "not permitted" in outcome.error


async def test_container_targets_are_off_by_default() -> None:
    launcher = launcher_for(())
    assert isinstance(launcher, DisabledLauncher)
    outcome = await launcher.launch(spec("true"), 1, 10)
    assert outcome.result == pb.ATTEMPT_RESULT_FAILED
    assert not outcome.retryable
    assert "DUETIME_LOCAL_LAUNCHER_COMMANDS" in outcome.error
