"""Work that must run to its end even when the task awaiting it is cancelled meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def despite_cancellation(work: Awaitable[T]) -> tuple[T, bool]:
    """Awaits ``work`` to its end even if the calling task is cancelled meanwhile; its result,
    and whether the caller was cancelled (then to raise CancelledError itself). Work that
    failed raises its error, or CancelledError once the caller was cancelled."""
    future = asyncio.ensure_future(work)
    cancelled = False
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            if future.cancelled():
                raise
            cancelled = True
        except Exception:
            break  # the work failed: raised below
    if cancelled and future.exception() is not None:
        raise asyncio.CancelledError
    return future.result(), cancelled
