"""Duetime services as real processes, as they are deployed."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[1]


def tool(name: str) -> str:
    """A developer tool installed by scripts/tools into .tools/."""
    for candidate in (
        REPO / ".tools" / "bin" / name,
        REPO / ".tools" / "node_modules" / ".bin" / name,
    ):
        if candidate.exists():
            return str(candidate)
    raise AssertionError(f"{name} is not installed: run scripts/tools")


@dataclass
class Service:
    process: asyncio.subprocess.Process
    port: int
    output: list[str]

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


async def _pump(
    stream: asyncio.StreamReader,
    sinks: list[list[str]],
    port_seen: asyncio.Future[int],
    marker: str,
) -> None:
    pattern = re.compile(rf"^{marker}=(\d+)$")
    while raw := await stream.readline():
        line = raw.decode(errors="replace").rstrip()
        for lines in sinks:
            lines.append(line)
        match = pattern.match(line)
        if match and not port_seen.done():
            port_seen.set_result(int(match[1]))


def _not_json(lines: list[str]) -> list[str]:
    """The lines that are not one JSON object each."""
    found = []
    for line in lines:
        try:
            parsed = json.loads(line)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            found.append(line)
    return found


@asynccontextmanager
async def service(
    module: str, env: Mapping[str, str], port_marker: str, start_timeout: float = 30
) -> AsyncIterator[Service]:
    """Starts ``python -m module`` and waits until it prints ``<marker>=<port>``. Its output
    (stdout and stderr, as they come) is the service's ``output``."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    lines: list[str] = []
    logged: list[str] = []  # stderr: the service's log
    port_seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    pumped = asyncio.gather(
        _pump(process.stdout, [lines], port_seen, port_marker),
        _pump(process.stderr, [lines, logged], port_seen, port_marker),
    )
    try:
        waiting: list[asyncio.Future[Any]] = [port_seen, pumped]
        done, _ = await asyncio.wait(
            waiting, timeout=start_timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if port_seen not in done:
            raise AssertionError(f"{module} did not start:\n" + "\n".join(lines[-40:]))
        yield Service(process, port_seen.result(), lines)
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), timeout=15)
            except TimeoutError:
                process.kill()
                await process.wait()
        await pumped
        if keep := os.environ.get("DUETIME_KEEP_LOGS"):
            # A bench's or a test's service logs kept for a look afterwards.
            path = Path(keep) / f"{module}-{process.pid}.log"
            path.write_text("\n".join(lines) + "\n")
    # An unexpected exception in one of its handlers (answered INTERNAL) fails the test.
    failed = [line for line in lines if '"action": "rpc_failed"' in line]
    assert not failed, f"{module}: a handler failed unexpectedly:\n" + "\n".join(failed)[:4000]
    # Its log is JSON lines only: nothing else (gRPC's C core, a library) writes to stderr.
    text = _not_json(logged)
    assert not text, f"{module}: lines on stderr that are not JSON:\n" + "\n".join(text)[:4000]


async def together(starts: Sequence[Awaitable[T]]) -> list[T]:
    """Awaits the starts at once, their results in order: a service's start is mostly its
    interpreter's imports, so several overlap well. On a failure the others are cancelled
    (a service cancelled while starting is stopped) and the first failure is raised."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(_awaited(start)) for start in starts]
    except ExceptionGroup as failed:
        raise failed.exceptions[0] from None
    return [task.result() for task in tasks]


async def _awaited(start: Awaitable[T]) -> T:
    return await start


async def enter_together(
    stack: AsyncExitStack, managers: Sequence[AbstractAsyncContextManager[T]]
) -> list[T]:
    """Enters the context managers (services) at once; ``stack`` exits them at once too."""
    own = [AsyncExitStack() for _ in managers]
    stack.push_async_callback(_close_together, own)
    return await together([s.enter_async_context(m) for s, m in zip(own, managers, strict=True)])


async def _close_together(stacks: list[AsyncExitStack]) -> None:
    """Closes every stack, each to its end even when another fails; then the first failure."""
    outcomes = await asyncio.gather(*(s.aclose() for s in stacks), return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
