"""Running a podman command: without the worker's own DUETIME_* variables (its token), its
output in files, and killed when it takes too long or its caller is cancelled."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from dataclasses import dataclass
from typing import IO

log = logging.getLogger(__name__)

# Seconds a podman command (other than waiting for a container) may take.
COMMAND_TIMEOUT = 60.0


@dataclass(frozen=True)
class Finished:
    code: int
    out: str
    err: str

    @property
    def detail(self) -> str:
        lines = [line for line in self.err.splitlines() if line.strip()]
        return (lines[-1] if lines else f"exit status {self.code}")[:500]


def _read(file: IO[bytes]) -> str:
    file.seek(0)
    return file.read().decode("utf-8", "replace")


class Podman:
    """Runs podman commands without the worker's own DUETIME_* variables (its token)."""

    def __init__(self, command: str) -> None:
        self.command = command
        self._env = {k: v for k, v in os.environ.items() if not k.startswith("DUETIME_")}

    async def run(
        self, *args: str, pass_fds: tuple[int, ...] = (), within: float | None = COMMAND_TIMEOUT
    ) -> Finished:
        # Output goes to files, and the command is done when it exits: a container's monitor
        # (conmon) that a concurrent command's spawn let inherit a pipe would hold it open
        # for the container's life, and a read to the pipe's end would wait that long.
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            process = await asyncio.create_subprocess_exec(
                self.command,
                *args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=self._env,
                pass_fds=pass_fds,
            )
            try:
                async with asyncio.timeout(within):
                    code = await process.wait()
            except BaseException:  # timed out or cancelled: the command goes too
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
                raise
            return Finished(code, _read(out), _read(err))

    async def remove(self, *names: str) -> None:
        """Kills (at once) and removes the containers; absent ones are no error. A failure is
        logged (the next sweep after this worker is gone removes them)."""
        try:
            done = await self.run("rm", "--force", "--ignore", "--time", "0", *names)
            error = done.detail if done.code != 0 else ""
        except (OSError, TimeoutError) as failure:
            error = f"{type(failure).__name__}: {failure}"
        if error:
            log.error(
                "containers not removed",
                extra={"action": "container_remove_failed", "names": names, "error": error},
            )
