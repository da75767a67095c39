"""Work seen through despite its caller's cancellation: its result and whether the caller was
cancelled; its failure raised as it is, or as the caller's cancellation once there was one."""

from __future__ import annotations

import asyncio

import pytest

from duetime_worker.shielding import despite_cancellation


async def _after(answer: asyncio.Event, error: Exception | None) -> str:
    await answer.wait()
    if error is not None:
        raise error
    return "done"


async def _cancelled_meanwhile(error: Exception | None) -> asyncio.Task[tuple[str, bool]]:
    answer = asyncio.Event()
    caller = asyncio.create_task(despite_cancellation(_after(answer, error)))
    await asyncio.sleep(0)
    caller.cancel()
    await asyncio.sleep(0)
    assert not caller.done()  # the work goes on
    answer.set()
    await asyncio.gather(caller, return_exceptions=True)
    return caller


async def test_work_that_ends_is_seen_through_and_the_cancellation_reported() -> None:
    caller = await _cancelled_meanwhile(None)
    assert caller.result() == ("done", True)
    answer = asyncio.Event()
    answer.set()
    assert await despite_cancellation(_after(answer, None)) == ("done", False)


async def test_work_that_fails_raises_its_error_or_the_callers_cancellation() -> None:
    answer = asyncio.Event()
    answer.set()
    with pytest.raises(ValueError, match="refused"):
        await despite_cancellation(_after(answer, ValueError("refused")))
    caller = await _cancelled_meanwhile(ValueError("refused"))
    assert caller.cancelled()
