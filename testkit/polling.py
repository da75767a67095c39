"""Waiting in tests without fixed sleeps: poll until something holds (``eventually``) or
check that it keeps holding for a bounded window (``throughout``), failing at the first miss."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

Check = Callable[[], bool] | Callable[[], Awaitable[bool]]


async def _holds(check: Check) -> bool:
    outcome = check()
    if inspect.isawaitable(outcome):
        return await outcome
    return outcome


async def eventually(check: Check, within: float, what: str, interval: float = 0.1) -> float:
    """Polls ``check`` (plain or async) until it holds; returns the seconds that took, fails
    after ``within``."""
    started = time.monotonic()
    while True:
        if await _holds(check):
            return time.monotonic() - started
        if time.monotonic() - started > within:
            raise AssertionError(f"not within {within} s: {what}")
        await asyncio.sleep(interval)


async def throughout(check: Check, seconds: float, what: str, interval: float = 0.01) -> None:
    """Proves an absence: ``check`` holds at every poll for ``seconds``, failing at the first
    poll where it does not."""
    deadline = time.monotonic() + seconds
    while True:
        if not await _holds(check):
            raise AssertionError(f"no longer true: {what}")
        if time.monotonic() >= deadline:
            return
        await asyncio.sleep(interval)
