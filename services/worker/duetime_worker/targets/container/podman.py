"""The podman launcher: each attempt of a container target runs the job's image in a container
of its own on this host, through the ``podman`` command.

The container gets the target's command (the image's entrypoint replaced), args (its CMD
replaced) and env plus the variables every task gets (``container.task_env``), handed to podman
in an in-memory file, so no secret is on a command line or on disk. Its exit status is the
outcome: 0 success, anything else a retryable failure. An image that is not permitted, names no
registry, is missing (and not to be pulled, or not found where it is pulled from) or whose
command does not exist is a non-retryable failure with the reason.

At the attempt timeout the container is stopped (its stop signal, SIGKILL ``stop_seconds``
later); when the launch is cancelled (the lease lapsed by the worker's clock, the scheduler
said cancel, the worker hands it back on shutdown) it is killed at once, since the run may
already be another worker's. Either way the container is removed before the launch returns.
Containers carry labels naming the run, the attempt, the worker and the process that owns them
(``orphans``), so one left behind by a worker killed with -9 is removed by the next worker's
start or a peer's periodic sweep; podman's own ``--timeout`` kills it past its deadline even if
no worker ever comes back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import secrets
from dataclasses import dataclass

from duetime_worker.shielding import despite_cancellation
from duetime_worker.targets.container import orphans
from duetime_worker.targets.container.images import ImagePolicy
from duetime_worker.targets.container.launcher import PermittedLauncher, task_env
from duetime_worker.targets.container.podman_commands import Finished, Podman
from duetime_worker.targets.outcome import ANSWERED, BEGUN, NOT_BEGUN, Outcome, SendCheck
from duetime_worker.targets.run import ContainerTask, TargetRun
from duetime_worker.targets.target_deadline import Deadline

PULL_POLICIES = ("never", "missing", "always", "newer")
# podman's --timeout for a container is its deadline plus the stop grace plus this: a backstop
# for a container nobody removed, never reached while its worker lives.
BACKSTOP_MARGIN = 10.0
# Answers of a registry that mean the image is not there (retrying will not bring it).
_NOT_FOUND = ("manifest unknown", "name unknown", "not found", "does not exist", "denied")


@dataclass(frozen=True)
class PodmanSettings:
    command: str = "podman"
    # --pull for each container: never (images are put on the host beforehand), missing,
    # always, newer.
    pull: str = "never"
    # --network for each container; "" leaves podman's default.
    network: str = ""
    # --memory and --cpus for each container; "" for no limit.
    memory: str = ""
    cpus: str = ""
    # Seconds between the stop signal and SIGKILL at the attempt timeout.
    stop_seconds: int = 5
    # Seconds between two sweeps for orphaned containers.
    sweep_interval: float = 30.0
    concurrency: int = 16


class PodmanLauncher(PermittedLauncher):
    """Runs container targets with podman, at most ``settings.concurrency`` at once."""

    def __init__(self, settings: PodmanSettings, images: ImagePolicy, worker_id: str) -> None:
        super().__init__(settings.concurrency)
        self._settings = settings
        self._images = images
        self._podman = Podman(settings.command)
        self._owner = orphans.Owner.of_this_process(worker_id)
        self._sweeper = orphans.Sweeper(self._podman, self._owner)
        self._sweeping: asyncio.Task[None] | None = None
        self.stop_seconds = settings.stop_seconds + 2.0  # the stop, then the removal

    async def start(self) -> None:
        """Removes the orphans of earlier workers, then sweeps every ``sweep_interval``."""
        try:
            await self._sweeper.sweep(at_start=True)
        except OSError as error:
            raise RuntimeError(
                f"DUETIME_PODMAN_COMMAND={self._podman.command!r} cannot be run: {error}"
            ) from error
        self._sweeping = asyncio.create_task(self._sweeper.every(self._settings.sweep_interval))

    async def close(self) -> None:
        if self._sweeping is not None:
            self._sweeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeping

    async def _launch(
        self, run: TargetRun, target: ContainerTask, attempt: int, limit: float, check: SendCheck
    ) -> Outcome:
        refusal = self._images.refusal(target.image)
        if refusal is not None:
            return Outcome.failed(refusal, retryable=False, call=NOT_BEGUN)
        deadline = Deadline.after(limit)
        give_up = asyncio.get_running_loop().time() + limit
        env = {**target.env, **task_env(run, attempt, deadline)}
        broken = sorted(name for name, value in env.items() if "\n" in value or "\r" in value)
        if broken:
            return Outcome.failed(
                f"env {', '.join(broken)[:200]}: podman cannot pass a value with a line break",
                retryable=False,
                call=NOT_BEGUN,
            )
        name = f"duetime-{run.run_id}-{attempt}-{secrets.token_hex(3)}"
        labels = self._owner.labels(run.run_id, attempt, deadline.at + self._settings.stop_seconds)
        starting = False  # until ``podman start`` runs, nothing of the task can have run
        try:
            try:
                async with asyncio.timeout_at(give_up):
                    refused = await self._create(name, labels, env, target, limit)
                    if refused is None:
                        check()  # created (pulled), not started: nothing of the task ran yet
                        starting = True
                        refused = await self._start(name, target.image)
            except TimeoutError:
                return Outcome.timed_out(
                    f"the container did not start within {limit:g} s",
                    call=BEGUN if starting else NOT_BEGUN,
                )
            if refused is not None:
                return refused
            return await self._wait(name, limit, give_up)
        finally:
            # Killed at once if still running (cancelled), and removed, whatever happens here.
            _, cancelled = await despite_cancellation(self._podman.remove(name))
            if cancelled:
                raise asyncio.CancelledError

    async def _create(
        self,
        name: str,
        labels: dict[str, str],
        env: dict[str, str],
        target: ContainerTask,
        limit: float,
    ) -> Outcome | None:
        """Creates the container (pulling its image as the policy says); None once it
        exists, else the outcome."""
        args = _create_args(self._settings, name, labels, target, limit)
        env_file = os.memfd_create("duetime-env", os.MFD_CLOEXEC)
        try:
            os.write(env_file, "".join(f"{k}={v}\n" for k, v in env.items()).encode())
            os.lseek(env_file, 0, os.SEEK_SET)
            args += ["--env-file", f"/dev/fd/{env_file}", target.image, *target.args]
            done = await self._podman.run(*args, pass_fds=(env_file,), within=None)  # a pull
        except OSError as error:
            return Outcome.failed(f"cannot run podman: {error}", retryable=True, call=NOT_BEGUN)
        finally:
            os.close(env_file)
        if done.code == 0:
            return None
        return _start_failure(target.image, self._settings.pull, done)

    async def _start(self, name: str, image: str) -> Outcome | None:
        """Starts the created container; None once it runs, else the outcome."""
        try:
            done = await self._podman.run("start", name)
        except OSError as error:
            return Outcome.failed(f"cannot run podman: {error}", retryable=True, call=NOT_BEGUN)
        if done.code == 0:
            return None
        return _start_failure(image, self._settings.pull, done)

    async def _wait(self, name: str, limit: float, give_up: float) -> Outcome:
        waiting = asyncio.ensure_future(self._podman.run("wait", name, within=None))
        left = give_up - asyncio.get_running_loop().time()
        try:
            done, _ = await asyncio.wait([waiting], timeout=max(left, 0))
            if done:
                return _exit_outcome(waiting.result())
            grace = self._settings.stop_seconds
            await self._podman.run("stop", "--time", str(grace), name)
            code = (await waiting).out.strip()
            how = "killed" if code == "137" else f"exited with status {code}"
            return Outcome.timed_out(
                f"stopped at the {limit:g} s timeout ({how}; SIGKILL comes {grace} s after the "
                "stop signal)",
                call=BEGUN,
            )
        finally:
            waiting.cancel()


def _create_args(
    settings: PodmanSettings,
    name: str,
    labels: dict[str, str],
    target: ContainerTask,
    limit: float,
) -> list[str]:
    """``podman create``'s arguments up to its env file: the name, pull policy, backstop
    timeout, labels, limits and the target's entrypoint."""
    backstop = math.ceil(limit + settings.stop_seconds + BACKSTOP_MARGIN)
    args = ["create", "--name", name, "--pull", settings.pull]
    args += ["--timeout", str(backstop)]
    for key, value in labels.items():
        args += ["--label", f"{key}={value}"]
    for option, value in (
        ("--network", settings.network),
        ("--memory", settings.memory),
        ("--cpus", settings.cpus),
    ):
        if value:
            args += [option, value]
    if target.command:
        args += ["--entrypoint", json.dumps(list(target.command))]
    return args


def _exit_outcome(waited: Finished) -> Outcome:
    if waited.code != 0:
        # podman wait itself failed: the container went away under it.
        return Outcome.failed(f"container lost: {waited.detail}", retryable=True, call=BEGUN)
    code = waited.out.strip()
    if code == "0":
        return Outcome.succeeded()
    return Outcome.failed(f"exited with status {code}", retryable=True, call=ANSWERED)


def _start_failure(image: str, pull: str, done: Finished) -> Outcome:
    """Why ``podman create`` or ``start`` did not start the container, and whether trying
    again may help."""
    detail = done.detail
    lowered = done.err.lower()
    shown = repr(image[:200])
    if "image not known" in lowered:
        return Outcome.failed(
            f"image {shown} is not on this worker (pull policy {pull}): {detail}",
            retryable=False,
            call=NOT_BEGUN,
        )
    if "executable file not found" in lowered or "no such file or directory" in lowered:
        return Outcome.failed(
            f"cannot run the command in {shown}: {detail}", retryable=False, call=NOT_BEGUN
        )
    if ("pull" in lowered or "registry" in lowered) and any(m in lowered for m in _NOT_FOUND):
        return Outcome.failed(f"image {shown} not found: {detail}", retryable=False, call=NOT_BEGUN)
    return Outcome.failed(f"podman could not start the container: {detail}", retryable=True)
