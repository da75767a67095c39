"""podman for the container tests: the project's podman settings (runc, explicit ulimits),
a tiny task image made from Debian's busybox-static (no registry is reachable), and the
containers a test's runs left, found by their labels."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from duetime_worker.targets.container import orphans
from testkit.processes import REPO

CONTAINERS_CONF = REPO / "deploy" / "podman" / "containers.conf"
TASK_IMAGE = "localhost/duetime-test-task:1"
BUSYBOX = Path("/bin/busybox")


def require_podman() -> None:
    """Skips the test where podman is truly absent; in CI (CI=true) that is a failure, since
    scripts/tools installs it."""
    if shutil.which("podman") and BUSYBOX.exists():
        os.environ["CONTAINERS_CONF"] = str(CONTAINERS_CONF)
        return
    message = "podman or busybox-static is not installed (scripts/tools installs them as root)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _build_task_image() -> None:
    """A busybox-static root file system, imported as TASK_IMAGE."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        (root / "bin").mkdir(parents=True)
        (root / "tmp").mkdir(mode=0o1777)
        shutil.copy2(BUSYBOX, root / "bin" / "busybox")
        applets = subprocess.run(
            [str(BUSYBOX), "--list"], check=True, capture_output=True, text=True
        ).stdout.split()
        for applet in applets:
            if applet != "busybox":
                (root / "bin" / applet).symlink_to("busybox")
        archive = Path(tmp) / "root.tar"
        subprocess.run(["tar", "-C", str(root), "-cf", str(archive), "."], check=True)
        cmd = 'CMD ["sh", "-c", "exit 4"]'
        importing = ["podman", "import", "--quiet", "--change", cmd, str(archive), TASK_IMAGE]
        subprocess.run(importing, check=True, capture_output=True)


def task_image() -> str:
    """TASK_IMAGE, made once per machine (its CMD exits 4: a target without command runs it)."""
    require_podman()
    if subprocess.run(["podman", "image", "exists", TASK_IMAGE]).returncode != 0:
        _build_task_image()
    return TASK_IMAGE


async def containers(label: str, value: str) -> list[dict[str, Any]]:
    """The containers (running or not) whose ``label`` is ``value``."""
    process = await asyncio.create_subprocess_exec(
        "podman",
        "ps",
        "--all",
        "--no-trunc",
        "--filter",
        f"label={label}={value}",
        "--format",
        "json",
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await process.communicate()
    assert process.returncode == 0
    found: list[dict[str, Any]] = json.loads(out or b"[]")
    return found


async def containers_of_run(run_id: str) -> list[dict[str, Any]]:
    return await containers(orphans.RUN, run_id)
