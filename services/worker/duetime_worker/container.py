"""Container targets: a launcher interface, and a local-process launcher for operators who
enable it for a list of permitted executables (a Kubernetes launcher can slot in later).

The local launcher runs ``command + args`` (the image is not used) with the target's
environment plus ``DUETIME_IDEMPOTENCY_KEY``, ``DUETIME_ATTEMPT`` and the W3C ``TRACEPARENT`` of
the target call (so the process can join the run's trace), kills it at the attempt timeout,
and reads exit status 0 as success, anything else as a retryable failure. It runs a bounded
number of processes at once. A worker reserves a process permit (``reserve``) before it starts
an attempt of a container target, so no started attempt waits for one with its lease and
timeout running; an attempt launched without a reservation (its dispatch message did not say
the target's kind) while every permit is taken is handed back unrun, "launcher busy".
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

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_infra.tracecontext import current_traceparent
from duetime_worker.outcome import Outcome

log = logging.getLogger(__name__)


LAUNCHER_BUSY = "launcher busy: every local process permit was taken"


class Reservation:
    """A launcher's permit for one process, given back once (``release``)."""

    def __init__(self, permits: asyncio.Semaphore | None) -> None:
        self._permits = permits

    def release(self) -> None:
        if self._permits is not None:
            self._permits.release()
            self._permits = None


class Launcher(Protocol):
    async def reserve(self) -> Reservation:
        """Waits for a permit to run one process."""
        ...

    async def launch(
        self, run: pb.RunSpec, attempt: int, limit: float, reservation: Reservation | None = None
    ) -> Outcome:
        """Runs the run's container target to its end (or the timeout) and says how it ended;
        the reservation, when given, is used and released."""
        ...


class DisabledLauncher:
    async def reserve(self) -> Reservation:
        return Reservation(None)  # nothing runs here: the launch fails at once

    async def launch(
        self, run: pb.RunSpec, attempt: int, limit: float, reservation: Reservation | None = None
    ) -> Outcome:
        if reservation is not None:
            reservation.release()
        return Outcome.failed(
            "container targets are not enabled on this worker "
            "(the operator sets DUETIME_LOCAL_LAUNCHER_COMMANDS)",
            retryable=False,
        )


# Variables that would let a target's environment choose what actually runs.
_LOADER_VARIABLES = frozenset({"PATH", "BASH_ENV", "ENV", "PYTHONPATH", "PYTHONSTARTUP"})


class LocalProcessLauncher:
    """Runs permitted executables as local processes, each in its own process group, at most
    ``concurrency`` at once."""

    def __init__(self, permitted: Sequence[str], concurrency: int = 16) -> None:
        self._permitted = set(permitted)
        self._running = asyncio.Semaphore(concurrency)
        # Resolved paths of the permitted names, so a permitted `sh` also permits `/bin/sh`.
        self._resolved = {p for p in (shutil.which(name) for name in permitted) if p}

    def _allowed(self, executable: str) -> bool:
        if executable in self._permitted:
            return True
        resolved = shutil.which(executable)
        return resolved is not None and resolved in self._resolved

    async def reserve(self) -> Reservation:
        await self._running.acquire()
        return Reservation(self._running)

    async def launch(
        self, run: pb.RunSpec, attempt: int, limit: float, reservation: Reservation | None = None
    ) -> Outcome:
        if reservation is None:
            # No waiting here: the attempt is started, and the wait would count as its timeout.
            if self._running.locked():
                return Outcome.handed_back(LAUNCHER_BUSY)
            reservation = await self.reserve()
        try:
            return await self._launch(run, attempt, limit)
        finally:
            reservation.release()

    async def _launch(self, run: pb.RunSpec, attempt: int, limit: float) -> Outcome:
        target = run.target.container
        argv = [*target.command, *target.args]
        if not target.command:
            return Outcome.failed(
                "the local launcher needs an explicit command (images are not run)",
                retryable=False,
            )
        if not self._allowed(argv[0]):
            return Outcome.failed(
                f"command {argv[0][:200]!r} is not permitted on this worker", retryable=False
            )
        # The permitted command is resolved with the worker's own PATH, and the target's
        # environment may not change which program runs or what it loads.
        worker_path = os.environ.get("PATH", os.defpath)
        program = shutil.which(argv[0], path=worker_path)
        if program is None:
            return Outcome.failed(f"command {argv[0][:200]!r} not found", retryable=False)
        env = {
            **{
                k: v
                for k, v in target.env.items()
                if k not in _LOADER_VARIABLES and not k.startswith("LD_")
            },
            "PATH": worker_path,
            "DUETIME_IDEMPOTENCY_KEY": run.idempotency_key,
            "DUETIME_ATTEMPT": str(attempt),
        }
        # The target call's span when tracing is on, else the run's own context.
        traceparent = current_traceparent(run.traceparent)
        if traceparent:
            env["TRACEPARENT"] = traceparent
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
        return Outcome.failed(f"cannot start {argv[0][:200]!r}: {error}", retryable=True)
    try:
        code = await asyncio.wait_for(process.wait(), limit)
    except TimeoutError:
        await _kill(process)
        return Outcome.timed_out(f"killed after the {limit:g} s timeout")
    except asyncio.CancelledError:
        await _kill(process)
        raise
    if code == 0:
        return Outcome.succeeded()
    return Outcome.failed(f"exited with status {code}", retryable=True)


async def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    await process.wait()


def launcher_for(permitted: Sequence[str], concurrency: int = 16) -> Launcher:
    return LocalProcessLauncher(permitted, concurrency) if permitted else DisabledLauncher()
