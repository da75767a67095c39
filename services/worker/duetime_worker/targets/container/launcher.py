"""Container targets: the launcher interface, the permits that bound how many tasks run at
once, the environment every task gets, and the local-process launcher (the podman launcher is
in ``podman``; a Kubernetes launcher would be a third implementation of ``Launcher``).

Every task gets the target's environment plus ``DUETIME_IDEMPOTENCY_KEY``, ``DUETIME_ATTEMPT``,
the W3C ``TRACEPARENT`` of the target call (so the task can join the run's trace), and the
attempt's deadline: ``DUETIME_DEADLINE`` (RFC 3339, UTC) and ``DUETIME_DEADLINE_SECONDS`` (left
when the task starts). Exit status 0 is success, anything else a retryable failure.

A worker reserves a permit (``reserve``, waited for in weighted fair order across teams:
``slots``) before it starts an attempt of a container target, so no started attempt waits for
one with its lease and timeout running; an attempt launched without a reservation (its
dispatch message did not say the target's kind) while every permit is taken is handed back
unrun, "launcher busy".

The local launcher runs ``command + args`` (the image is not used) of a list of permitted
executables, kills it at the attempt timeout, and is for operators who have no container runtime.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
from collections.abc import Sequence
from typing import Protocol

from duetime_infra.tracecontext import current_traceparent
from duetime_worker.herd.slots import ANYONE, Flow, Reservation, WeightedSlots
from duetime_worker.targets.outcome import ANSWERED, BEGUN, NOT_BEGUN, Outcome, SendCheck, no_check
from duetime_worker.targets.run import ContainerTask, TargetRun
from duetime_worker.targets.target_deadline import Deadline

log = logging.getLogger(__name__)


LAUNCHER_BUSY = "launcher busy: every container permit was taken"


class PermittedLauncher:
    """A launcher whose tasks run under its permits (see the module doc), at most
    ``concurrency`` at once, waited for in weighted fair order across teams; an implementation
    defines ``_launch``."""

    stop_seconds = 0.0

    def __init__(self, concurrency: int) -> None:
        self._running = WeightedSlots(concurrency)

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def reserve(self, flow: Flow = ANYONE) -> Reservation:
        return await self._running.reserved(flow)

    async def launch(
        self,
        run: TargetRun,
        attempt: int,
        limit: float,
        reservation: Reservation | None = None,
        check: SendCheck = no_check,
    ) -> Outcome:
        task = run.target
        if not isinstance(task, ContainerTask):
            if reservation is not None:
                reservation.release()
            return Outcome.failed("not a container target", retryable=False, call=NOT_BEGUN)
        if reservation is None:
            # No waiting here: the attempt is started, and the wait would count as its timeout.
            if not self._running.try_reserve():
                return Outcome.handed_back(LAUNCHER_BUSY, call=NOT_BEGUN)
            reservation = Reservation(self._running)
        try:
            return await self._launch(run, task, attempt, limit, check)
        finally:
            reservation.release()

    async def _launch(
        self, run: TargetRun, task: ContainerTask, attempt: int, limit: float, check: SendCheck
    ) -> Outcome:
        """Runs ``task``, the run's target, under a permit taken."""
        raise NotImplementedError


def task_env(run: TargetRun, attempt: int, deadline: Deadline) -> dict[str, str]:
    """What Duetime adds to a task's environment (the target's own names cannot start with
    ``DUETIME_``, so nothing here is overridden)."""
    env = {
        "DUETIME_IDEMPOTENCY_KEY": run.idempotency_key,
        "DUETIME_ATTEMPT": str(attempt),
        "DUETIME_DEADLINE": deadline.rfc3339,
        "DUETIME_DEADLINE_SECONDS": deadline.seconds_left(),
    }
    # The target call's span when tracing is on, else the run's own context.
    traceparent = current_traceparent(run.traceparent)
    if traceparent:
        env["TRACEPARENT"] = traceparent
    return env


class Launcher(Protocol):
    # Seconds past the attempt timeout a launch may take to stop its task (stop, then kill).
    stop_seconds: float

    async def start(self) -> None:
        """Called once before the first launch (the podman launcher sweeps orphans here)."""
        ...

    async def close(self) -> None:
        """Called once after the last launch has ended."""
        ...

    async def reserve(self, flow: Flow = ANYONE) -> Reservation:
        """Waits for a permit to run one task, its turn among the waiting as ``flow``."""
        ...

    async def launch(
        self,
        run: TargetRun,
        attempt: int,
        limit: float,
        reservation: Reservation | None = None,
        check: SendCheck = no_check,
    ) -> Outcome:
        """Runs the run's container target to its end (or the timeout) and says how it ended;
        the reservation, when given, is used and released. ``check`` runs immediately before
        the task is started (a LeaseLapsed it raises means it never ran)."""
        ...


class DisabledLauncher:
    stop_seconds = 0.0

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def reserve(self, flow: Flow = ANYONE) -> Reservation:
        return Reservation(None)  # nothing runs here: the launch fails at once

    async def launch(
        self,
        run: TargetRun,
        attempt: int,
        limit: float,
        reservation: Reservation | None = None,
        check: SendCheck = no_check,
    ) -> Outcome:
        if reservation is not None:
            reservation.release()
        return Outcome.failed(
            "container targets are not enabled on this worker (DUETIME_CONTAINER_LAUNCHER is off)",
            retryable=False,
            call=NOT_BEGUN,
        )


# Variables that would let a target's environment choose what actually runs.
_LOADER_VARIABLES = frozenset({"PATH", "BASH_ENV", "ENV", "PYTHONPATH", "PYTHONSTARTUP"})


class LocalProcessLauncher(PermittedLauncher):
    """Runs permitted executables as local processes, each in its own process group, at most
    ``concurrency`` at once; killed at the timeout."""

    def __init__(self, permitted: Sequence[str], concurrency: int = 16) -> None:
        super().__init__(concurrency)
        self._permitted = set(permitted)
        # Resolved paths of the permitted names, so a permitted `sh` also permits `/bin/sh`.
        self._resolved = {p for p in (shutil.which(name) for name in permitted) if p}

    def _allowed(self, executable: str) -> bool:
        if executable in self._permitted:
            return True
        resolved = shutil.which(executable)
        return resolved is not None and resolved in self._resolved

    async def _launch(
        self, run: TargetRun, target: ContainerTask, attempt: int, limit: float, check: SendCheck
    ) -> Outcome:
        argv = [*target.command, *target.args]
        if not target.command:
            return Outcome.failed(
                "the local launcher needs an explicit command (images are not run)",
                retryable=False,
                call=NOT_BEGUN,
            )
        if not self._allowed(argv[0]):
            return Outcome.failed(
                f"command {argv[0][:200]!r} is not permitted on this worker",
                retryable=False,
                call=NOT_BEGUN,
            )
        # The permitted command is resolved with the worker's own PATH, and the target's
        # environment may not change which program runs or what it loads.
        worker_path = os.environ.get("PATH", os.defpath)
        program = shutil.which(argv[0], path=worker_path)
        if program is None:
            return Outcome.failed(
                f"command {argv[0][:200]!r} not found", retryable=False, call=NOT_BEGUN
            )
        env = {
            **{
                k: v
                for k, v in target.env.items()
                if k not in _LOADER_VARIABLES and not k.startswith("LD_")
            },
            "PATH": worker_path,
            **task_env(run, attempt, Deadline.after(limit)),
        }
        check()
        return await _run(program, argv, env, limit)


async def _run(program: str, argv: list[str], env: dict[str, str], limit: float) -> Outcome:
    """Runs one process to its end, killing it at ``limit`` seconds or when cancelled."""
    try:
        process = await asyncio.create_subprocess_exec(
            program,
            *argv[1:],
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as error:
        return Outcome.failed(
            f"cannot start {argv[0][:200]!r}: {error}", retryable=True, call=NOT_BEGUN
        )
    try:
        code = await asyncio.wait_for(process.wait(), limit)
    except TimeoutError:
        await _kill(process)
        return Outcome.timed_out(f"killed after the {limit:g} s timeout", call=BEGUN)
    except asyncio.CancelledError:
        await _kill(process)
        raise
    if code == 0:
        return Outcome.succeeded()
    return Outcome.failed(f"exited with status {code}", retryable=True, call=ANSWERED)


async def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    await process.wait()
