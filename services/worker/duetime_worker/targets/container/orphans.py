"""Containers left behind by a worker that died (kill -9, a crash, a reboot): who owns a
container, and the sweep that removes the ones whose owner is gone.

Each container is labelled with its run, attempt and worker, the time after which nobody needs
it any more (its deadline plus the stop grace), and its owner: the worker process as
``boot id / pid namespace / pid / start time``. A sweep removes a container when

- its owner was a process of this boot and pid namespace that no longer runs (a pid reused by
  another process has another start time), or of an earlier boot;
- or, owned from a pid namespace this sweeper cannot see into, it is past its remove-after
  time by more than ``OVERDUE`` (its owner would have removed it by then), or, at a worker's
  start, it carries this worker's id (an earlier incarnation of a worker with a stable id).

A sweeper never removes its own process's containers (their launches do), nor those of a
live owner it can see, so a wall clock that jumps cannot make it kill work in progress.

Containers without the owner label are never touched.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from duetime_worker.targets.container.podman_commands import Podman

log = logging.getLogger(__name__)

OWNER = "dev.duetime.owner"
WORKER = "dev.duetime.worker-id"
RUN = "dev.duetime.run-id"
ATTEMPT = "dev.duetime.attempt"
REMOVE_AFTER = "dev.duetime.remove-after"
# Past its remove-after time by this many seconds, a container is an orphan whoever owns it.
OVERDUE = 60.0


def _boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def _pid_namespace() -> str:
    return os.readlink("/proc/self/ns/pid").removeprefix("pid:[").removesuffix("]")


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of its stat), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields[19]


@dataclass(frozen=True)
class Owner:
    worker_id: str
    boot: str
    pid_namespace: str
    pid: int
    started: str

    @classmethod
    def of_this_process(cls, worker_id: str) -> Owner:
        pid = os.getpid()
        return cls(worker_id, _boot_id(), _pid_namespace(), pid, start_time(pid) or "")

    @property
    def token(self) -> str:
        return f"{self.boot}/{self.pid_namespace}/{self.pid}/{self.started}"

    def labels(self, run_id: str, attempt: int, remove_after: float) -> dict[str, str]:
        return {
            OWNER: self.token,
            WORKER: self.worker_id,
            RUN: run_id,
            ATTEMPT: str(attempt),
            REMOVE_AFTER: str(int(remove_after) + 1),
        }

    def orphan_reason(self, labels: dict[str, str], now: float, at_start: bool) -> str | None:
        """Why the container with these labels is an orphan, or None when it may be in use."""
        token = labels.get(OWNER, "")
        if token == self.token:
            return None  # ours: its launch removes it
        boot, _, rest = token.partition("/")
        namespace, _, rest = rest.partition("/")
        pid, _, started = rest.partition("/")
        if boot and boot != self.boot:
            return "its owner ran before this host's last boot"
        if namespace == self.pid_namespace and pid.isdigit():
            # An owner this sweeper can see: alive or not, whatever the clocks say.
            return None if start_time(int(pid)) == started else "its owner process is gone"
        with contextlib.suppress(ValueError):
            if now > float(labels.get(REMOVE_AFTER, "")) + OVERDUE:
                return "it is past its deadline"
        if at_start and labels.get(WORKER) == self.worker_id:
            return "an earlier worker with this id owned it"
        return None


class Sweeper:
    def __init__(self, podman: Podman, owner: Owner) -> None:
        self._podman = podman
        self._owner = owner

    async def sweep(self, *, at_start: bool = False) -> list[str]:
        """Removes the orphans it finds; their names."""
        listed = await self._podman.run(
            "ps", "--all", "--no-trunc", "--filter", f"label={OWNER}", "--format", "json"
        )
        if listed.code != 0:
            log.warning(
                "orphan sweep: cannot list containers",
                extra={"action": "orphan_sweep_failed", "error": listed.detail},
            )
            return []
        containers: list[dict[str, Any]] = json.loads(listed.out or "[]")
        now = time.time()
        orphaned = []
        for container in containers:
            labels = container.get("Labels") or {}
            reason = self._owner.orphan_reason(labels, now, at_start)
            if reason is None:
                continue
            names = container.get("Names") or [container["Id"]]
            orphaned.append(names[0])
            log.warning(
                "orphaned container removed",
                extra={
                    "action": "orphan_removed",
                    "container": names[0],
                    "run_id": labels.get(RUN),
                    "attempt": labels.get(ATTEMPT),
                    "worker_id": labels.get(WORKER),
                    "reason": reason,
                },
            )
        if orphaned:
            await self._podman.remove(*orphaned)
        return orphaned

    async def every(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await self.sweep()
            except Exception:  # a sweep that failed is tried again at the next interval
                log.exception("orphan sweep failed", extra={"action": "orphan_sweep_failed"})
