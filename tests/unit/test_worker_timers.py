"""Waits under one timer: each ends at its own deadline, or earlier by its answer."""

from __future__ import annotations

import asyncio

import pytest

from duetime_worker.herd.timers import Deadlines, time_out


def _future() -> asyncio.Future[None]:
    return asyncio.get_running_loop().create_future()


async def test_each_wait_ends_at_its_own_deadline_in_order() -> None:
    loop = asyncio.get_running_loop()
    deadlines = Deadlines()
    now = loop.time()
    late, early, answered = _future(), _future(), _future()
    deadlines.add(late, now + 0.2)
    deadlines.add(early, now + 0.05)
    deadlines.add(answered, now + 0.01)
    answered.set_result(None)  # answered before its deadline: left alone
    await asyncio.wait_for(early, 5)
    assert loop.time() >= now + 0.05 - 0.001
    assert not late.done()
    await asyncio.wait_for(late, 5)
    assert loop.time() >= now + 0.2 - 0.001


async def test_a_deadline_times_out_with_time_out_and_end_all_ends_the_rest() -> None:
    loop = asyncio.get_running_loop()
    deadlines = Deadlines(time_out)
    soon, later = _future(), _future()
    deadlines.add(soon, loop.time() + 0.02)
    deadlines.add(later, loop.time() + 30)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(soon, 5)
    deadlines.end_all()
    assert later.done()
    assert later.exception() is None


async def test_ended_waits_are_pruned_from_a_long_heap() -> None:
    loop = asyncio.get_running_loop()
    deadlines = Deadlines()
    for _ in range(5000):
        waiter = _future()
        deadlines.add(waiter, loop.time() + 3600)
        waiter.set_result(None)  # each answered long before its deadline
    assert len(deadlines._heap) < 2048
    deadlines.end_all()
