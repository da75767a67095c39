"""The client programs of clients/ as the end-to-end tests build and run them: offline, from
what scripts/tools fetched, with the tools' PATH; a failing command fails the test with its
output."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from testkit.processes import REPO

CLIENTS = REPO / "clients"
# A cold build (nothing compiled yet) of the Java or Go program takes a minute on two cores.
BUILD_TIMEOUT = 240.0
RUN_TIMEOUT = 180.0


@dataclass(frozen=True)
class Program:
    """A client program as a test builds and runs it, each step given a scratch directory."""

    prepare: Callable[[Path], Path]  # the directory it builds and runs in
    build: Callable[[Path], list[list[str]]]  # the commands that build it
    run: Callable[[Path], list[str]]  # the command that runs it
    env: Mapping[str, str] = field(default_factory=dict)
    # The variable that makes it trust the stack's CA.
    ca_variable: str = "DUETIME_TLS_CA_FILE"


def executable(name: str, *fallbacks: str) -> str:
    found = shutil.which(name) or next((f for f in fallbacks if Path(f).exists()), None)
    if found is None:
        raise AssertionError(f"{name} is not installed (CI machines have it; see scripts/tools)")
    return found


# The tools scripts/tools installs (buf, protoc, the plugins) before the system's own.
TOOLS_PATH = os.pathsep.join(
    [
        str(REPO / ".tools" / "bin"),
        str(REPO / ".tools" / "node_modules" / ".bin"),
        os.environ.get("PATH", ""),
    ]
)
GO_ENV = {"GOFLAGS": "-mod=readonly", "GOPROXY": "off", "GOTOOLCHAIN": "local"}


def go() -> str:
    return executable("go", "/usr/local/go/bin/go")


def outside_copy(scratch: Path, program: str) -> Path:
    """A copy of proto/ and of the program's own files (no generated code), laid out as in the
    repository; the program's directory in it."""
    shutil.copytree(REPO / "proto", scratch / "proto")
    ignore = shutil.ignore_patterns("gen", "node_modules", "dist", "target")
    return Path(shutil.copytree(CLIENTS / program, scratch / "clients" / program, ignore=ignore))


async def run(command: list[str], cwd: Path, env: Mapping[str, str], limit: float) -> str:
    """Runs a command to its end; fails the test with its output unless it exits 0 within
    ``limit`` seconds."""
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=cwd,
        env={**os.environ, "PATH": TOOLS_PATH, **env},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    started = time.monotonic()
    chunks: list[bytes] = []
    try:
        async with asyncio.timeout(limit):
            while chunk := await process.stdout.read(65536):
                chunks.append(chunk)
            await process.wait()
    except TimeoutError:
        process.kill()
        await process.wait()
        output = b"".join(chunks).decode(errors="replace")
        pytest.fail(f"{' '.join(command)} did not end within {limit:.0f} s:\n{output}")
    output = b"".join(chunks).decode(errors="replace")
    print(f"$ {' '.join(command)}  ({time.monotonic() - started:.1f} s)")
    if process.returncode != 0:
        pytest.fail(f"{' '.join(command)} exited {process.returncode}:\n{output}")
    return output
