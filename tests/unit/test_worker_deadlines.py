"""Waits under one timer: each ends at its own deadline, or earlier by its answer; a gate gives
its places in arrival order, to callers still waiting, and loses none to a caller that left."""

from __future__ import annotations

import asyncio

import pytest

from duetime_worker.deadlines import Deadlines, Gate, time_out


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


async def _held(gate: Gate) -> None:
    """Takes a place of ``gate`` that is free."""
    await asyncio.wait_for(gate.take(asyncio.get_running_loop().time() + 1), 1)


async def _taken_at_once(gate: Gate) -> bool:
    """Whether a place is free now (it is given back at once)."""
    try:
        await gate.take(asyncio.get_running_loop().time())
    except TimeoutError:
        return False
    gate.release()
    return True


async def test_a_gate_gives_places_in_arrival_order() -> None:
    loop = asyncio.get_running_loop()
    gate = Gate(1)
    await _held(gate)
    order: list[int] = []

    async def holder(n: int) -> None:
        await gate.take(loop.time() + 5)
        order.append(n)
        gate.release()

    waiting = [asyncio.create_task(holder(n)) for n in range(5)]
    await asyncio.sleep(0)
    gate.release()
    await asyncio.wait_for(asyncio.gather(*waiting), 5)
    assert order == [0, 1, 2, 3, 4]
    assert await _taken_at_once(gate)


async def test_a_wait_past_its_deadline_raises_and_takes_nothing() -> None:
    loop = asyncio.get_running_loop()
    gate = Gate(1)
    await _held(gate)
    started = loop.time()
    with pytest.raises(TimeoutError):
        await gate.take(started + 0.05)
    assert loop.time() >= started + 0.05 - 0.001
    gate.release()  # the holder's place comes back: nobody took it meanwhile
    await _held(gate)
    assert not await _taken_at_once(gate)


async def test_a_place_given_to_a_cancelled_caller_goes_to_the_next() -> None:
    loop = asyncio.get_running_loop()
    gate = Gate(1)
    await _held(gate)
    first = asyncio.create_task(gate.take(loop.time() + 5))
    second = asyncio.create_task(gate.take(loop.time() + 5))
    await asyncio.sleep(0)
    gate.release()  # the place goes to ``first``...
    first.cancel()  # ...which is cancelled before it runs: it passes the place on
    await asyncio.wait_for(second, 5)
    assert first.cancelled()
    assert not await _taken_at_once(gate)
    gate.release()
    assert await _taken_at_once(gate)


async def test_a_cancelled_waiter_is_skipped() -> None:
    loop = asyncio.get_running_loop()
    gate = Gate(1)
    await _held(gate)
    left = asyncio.create_task(gate.take(loop.time() + 5))
    stays = asyncio.create_task(gate.take(loop.time() + 5))
    await asyncio.sleep(0)
    left.cancel()
    await asyncio.sleep(0)
    gate.release()
    await asyncio.wait_for(stays, 5)
    assert not await _taken_at_once(gate)


async def test_waiters_that_left_are_pruned_from_the_queue() -> None:
    loop = asyncio.get_running_loop()
    gate = Gate(1)
    await _held(gate)
    for _ in range(5000):
        with pytest.raises(TimeoutError):
            await gate.take(loop.time())  # each times out, no place ever freed meanwhile
    assert len(gate._waiting) < 2048
    gate.release()
    assert await _taken_at_once(gate)
