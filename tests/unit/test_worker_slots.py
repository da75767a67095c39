"""The worker's execution slots, shared between the priorities by weight."""

from __future__ import annotations

import asyncio

import pytest

from duetime_core.jobspec import Priority
from duetime_worker.slots import SlotsClosed, WeightedSlots


async def test_freed_slots_go_to_waiting_runs_by_priority_weight_and_low_still_moves() -> None:
    slots = WeightedSlots(1)
    await slots.acquire(Priority.LOW)  # the one slot is busy
    granted: list[Priority] = []

    async def run(priority: Priority) -> None:
        await slots.acquire(priority)
        granted.append(priority)

    # A backlog of low-priority runs came first; high and normal ones after it.
    waiting = [asyncio.create_task(run(Priority.LOW)) for _ in range(7)]
    waiting += [asyncio.create_task(run(Priority.HIGH)) for _ in range(7)]
    waiting += [asyncio.create_task(run(Priority.NORMAL)) for _ in range(7)]
    await asyncio.sleep(0)
    for _ in range(7):
        slots.release()
        await asyncio.sleep(0)
    assert sorted(granted[:7]) == sorted(
        [Priority.HIGH] * 4 + [Priority.NORMAL] * 2 + [Priority.LOW]
    )
    for _ in range(14):
        slots.release()
        await asyncio.sleep(0)
    await asyncio.gather(*waiting)


async def test_a_cancelled_waiter_passes_its_slot_on() -> None:
    slots = WeightedSlots(1)
    await slots.acquire(Priority.NORMAL)
    gone = asyncio.create_task(slots.acquire(Priority.HIGH))
    after = asyncio.create_task(slots.acquire(Priority.LOW))
    await asyncio.sleep(0)
    gone.cancel()
    await asyncio.sleep(0)
    slots.release()
    await asyncio.wait_for(after, 1)
    slots.release()
    await asyncio.wait_for(slots.acquire(Priority.NORMAL), 1)  # nothing leaked, nothing lost


async def test_closed_slots_refuse_those_waiting_and_those_to_come() -> None:
    slots = WeightedSlots(1)
    await slots.acquire(Priority.NORMAL)
    waiting = asyncio.create_task(slots.acquire(Priority.HIGH))
    await asyncio.sleep(0)
    slots.close()
    with pytest.raises(SlotsClosed):
        await waiting
    slots.release()  # the running attempt ends: its slot goes to no one
    with pytest.raises(SlotsClosed):
        await slots.acquire(Priority.HIGH)


async def test_freed_slots_go_to_teams_in_turn_so_a_small_team_passes_a_big_backlog() -> None:
    slots = WeightedSlots(1)
    await slots.acquire(Priority.NORMAL, "big")
    granted: list[str] = []

    async def run(team: str) -> None:
        await slots.acquire(Priority.NORMAL, team)
        granted.append(team)

    waiting = [asyncio.create_task(run("big")) for _ in range(50)]
    await asyncio.sleep(0)
    waiting += [asyncio.create_task(run("small")) for _ in range(2)]
    await asyncio.sleep(0)
    for _ in range(52):
        slots.release()
        await asyncio.sleep(0)
    await asyncio.gather(*waiting)
    # The small team's two runs came after fifty of the big team's and went within five turns.
    assert granted.index("small") <= 2
    assert [i for i, t in enumerate(granted) if t == "small"][1] <= 4


async def test_slots_go_to_teams_in_proportion_to_their_weights() -> None:
    slots = WeightedSlots(1)
    await slots.acquire(Priority.NORMAL, "x")
    granted: list[str] = []

    async def run(team: str, weight: float) -> None:
        await slots.acquire(Priority.NORMAL, team, weight)
        granted.append(team)

    waiting = [asyncio.create_task(run("heavy", 3)) for _ in range(40)]
    waiting += [asyncio.create_task(run("light", 1)) for _ in range(40)]
    await asyncio.sleep(0)
    for _ in range(80):
        slots.release()
        await asyncio.sleep(0)
    await asyncio.gather(*waiting)
    assert granted[:40].count("heavy") == 30


async def test_slots_are_contended_while_a_caller_waits_for_one() -> None:
    slots = WeightedSlots(1)
    await slots.acquire(Priority.NORMAL)
    assert not slots.contended  # all taken, nobody waiting
    waiter = asyncio.ensure_future(slots.acquire(Priority.NORMAL))
    await asyncio.sleep(0)  # the waiter queues
    assert slots.contended
    slots.release()
    await waiter
    assert not slots.contended
