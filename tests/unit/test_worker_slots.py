"""The worker's slots (execution slots, start permits, connection limits): shared between
priorities and teams by weight, first come first served within a team, each wait ending at its
deadline, and no place lost or given twice."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from duetime_core.jobspec import Priority
from duetime_worker.herd.slots import (
    ANYONE,
    Flow,
    Permits,
    SlotsClosed,
    WeightedSlots,
    reserved_ahead,
)

NORMAL = Priority.NORMAL


def flow(team: str, weight: float = 1.0, priority: Priority = NORMAL) -> Flow:
    return Flow(priority, team, weight)


async def _taken_at_once(slots: WeightedSlots) -> bool:
    """Whether a place is free now (it is given back at once)."""
    try:
        await slots.reserve(ANYONE, asyncio.get_running_loop().time())
    except TimeoutError:
        return False
    slots.release()
    return True


async def _grants(slots: WeightedSlots, waiting: list[asyncio.Task[None]]) -> None:
    """Frees a place for each waiting task, one at a time, each taker's turn run in between."""
    await asyncio.sleep(0)
    for _ in waiting:
        slots.release()
        await asyncio.sleep(0)
    await asyncio.wait_for(asyncio.gather(*waiting), 5)


async def test_freed_slots_go_to_waiting_runs_by_priority_weight_and_low_still_moves() -> None:
    slots = WeightedSlots(1)
    await slots.reserve(flow("x", priority=Priority.LOW))  # the one slot is busy
    granted: list[Priority] = []

    async def run(priority: Priority) -> None:
        await slots.reserve(flow("x", priority=priority))
        granted.append(priority)

    # A backlog of low-priority runs came first; high and normal ones after it.
    waiting = [asyncio.create_task(run(Priority.LOW)) for _ in range(7)]
    waiting += [asyncio.create_task(run(Priority.HIGH)) for _ in range(7)]
    waiting += [asyncio.create_task(run(Priority.NORMAL)) for _ in range(7)]
    await _grants(slots, waiting)
    assert sorted(granted[:7]) == sorted(
        [Priority.HIGH] * 4 + [Priority.NORMAL] * 2 + [Priority.LOW]
    )


async def test_a_wait_for_a_run_whose_time_has_come_goes_before_every_wait_asked_ahead() -> None:
    slots = WeightedSlots(1)
    await slots.reserve(flow("x"))
    granted: list[str] = []

    async def run(name: str, team: str, ahead: bool) -> None:
        await slots.reserve(flow(team), ahead=ahead)
        granted.append(name)

    # A herd's starts asked ahead came first, of two teams; then two starts that are due.
    waiting = [asyncio.create_task(run(f"ahead-{i}", f"t{i % 2}", True)) for i in range(20)]
    await asyncio.sleep(0)
    waiting += [asyncio.create_task(run(f"due-{i}", "x", False)) for i in range(2)]
    await _grants(slots, waiting)
    assert granted[:2] == ["due-0", "due-1"]
    # Those asked ahead still go by their teams' turns among themselves.
    assert granted[2:6] == ["ahead-0", "ahead-1", "ahead-2", "ahead-3"]


async def test_a_wait_asked_ahead_joins_the_due_in_its_turn_once_its_time_has_come() -> None:
    slots = WeightedSlots(1)
    await slots.reserve(flow("x"))
    granted: list[str] = []
    loop = asyncio.get_running_loop()

    async def due(name: str) -> None:
        await slots.reserve(flow("x"))
        granted.append(name)

    async def asked_ahead(name: str) -> None:
        with await reserved_ahead(slots, flow("x"), loop.time() + 0.05):
            granted.append(name)
            await asyncio.sleep(0)

    first = asyncio.create_task(due("due-first"))
    ahead = asyncio.create_task(asked_ahead("ahead"))
    await asyncio.sleep(0.1)  # the run's time has come: it waits among the due now
    later = asyncio.create_task(due("due-later"))
    await asyncio.sleep(0)
    slots.release()
    await asyncio.wait_for(first, 5)
    slots.release()
    await asyncio.wait_for(ahead, 5)  # gives its place back on leaving
    await asyncio.wait_for(later, 5)
    assert granted == ["due-first", "ahead", "due-later"]


async def test_freed_slots_go_to_teams_in_turn_so_a_small_team_passes_a_big_backlog() -> None:
    slots = WeightedSlots(1)
    await slots.reserve(flow("big"))
    granted: list[str] = []

    async def run(team: str) -> None:
        await slots.reserve(flow(team))
        granted.append(team)

    waiting = [asyncio.create_task(run("big")) for _ in range(50)]
    await asyncio.sleep(0)
    waiting += [asyncio.create_task(run("small")) for _ in range(2)]
    await _grants(slots, waiting)
    # The small team's two runs came after fifty of the big team's and went within five turns.
    assert granted.index("small") <= 2
    assert [i for i, t in enumerate(granted) if t == "small"][1] <= 4


async def test_slots_go_to_teams_in_proportion_to_their_weights() -> None:
    slots = WeightedSlots(1)
    await slots.reserve(flow("x"))
    granted: list[str] = []

    async def run(team: str, weight: float) -> None:
        await slots.reserve(flow(team, weight))
        granted.append(team)

    waiting = [asyncio.create_task(run("heavy", 3)) for _ in range(40)]
    waiting += [asyncio.create_task(run("light", 1)) for _ in range(40)]
    await _grants(slots, waiting)
    assert granted[:40].count("heavy") == 30


async def test_each_team_is_served_in_its_own_arrival_order() -> None:
    slots = WeightedSlots(2)
    for _ in range(2):
        await slots.reserve(flow("x"))
    granted: list[tuple[str, int]] = []

    async def run(team: str, n: int) -> None:
        await slots.reserve(flow(team, 1 + n % 3))  # a team's weight may change between runs
        granted.append((team, n))

    waiting = [asyncio.create_task(run(team, n)) for n in range(30) for team in ("a", "b", "c")]
    await _grants(slots, waiting)
    for team in ("a", "b", "c"):
        assert [n for t, n in granted if t == team] == list(range(30))


async def test_a_wait_past_its_deadline_raises_takes_nothing_and_spends_no_turn() -> None:
    loop = asyncio.get_running_loop()
    slots = WeightedSlots(1)
    await slots.reserve(flow("big"))
    granted: list[str] = []

    async def run(team: str) -> None:
        await slots.reserve(flow(team), loop.time() + 5)
        granted.append(team)

    big = [asyncio.create_task(run("big")) for _ in range(10)]
    started = loop.time()
    with pytest.raises(TimeoutError):
        await slots.reserve(flow("small"), started + 0.05)  # nobody frees a place meanwhile
    assert loop.time() >= started + 0.05 - 0.001
    small = asyncio.create_task(run("small"))
    await _grants(slots, [*big, small])
    # The small team's wait that timed out cost it no turn: its next run goes next.
    assert granted[0] == "small"
    assert not await _taken_at_once(slots)  # the last taker holds the one place
    slots.release()
    assert await _taken_at_once(slots)


async def test_a_place_given_to_a_cancelled_caller_goes_to_the_next() -> None:
    loop = asyncio.get_running_loop()
    slots = WeightedSlots(1)
    await slots.reserve()
    first = asyncio.create_task(slots.reserve(flow("a"), loop.time() + 5))
    second = asyncio.create_task(slots.reserve(flow("b"), loop.time() + 5))
    await asyncio.sleep(0)
    slots.release()  # the place goes to ``first``...
    first.cancel()  # ...which is cancelled before it runs: it passes the place on
    await asyncio.wait_for(second, 5)
    assert first.cancelled()
    assert not await _taken_at_once(slots)
    slots.release()
    assert await _taken_at_once(slots)


async def test_a_cancelled_waiter_is_skipped_and_no_longer_contends() -> None:
    slots = WeightedSlots(1)
    await slots.reserve()
    assert not slots.contended  # all taken, nobody waiting
    left = asyncio.create_task(slots.reserve(flow("a")))
    stays = asyncio.create_task(slots.reserve(flow("a")))
    await asyncio.sleep(0)
    assert slots.contended
    left.cancel()
    stays.cancel()
    await asyncio.sleep(0)
    assert not slots.contended
    again = asyncio.create_task(slots.reserve(flow("b")))
    await asyncio.sleep(0)
    slots.release()
    await asyncio.wait_for(again, 5)
    assert not await _taken_at_once(slots)
    slots.release()
    assert await _taken_at_once(slots)


async def test_a_place_freed_as_its_only_waiter_is_cancelled_is_not_lost() -> None:
    slots = WeightedSlots(1)
    await slots.reserve()
    left = asyncio.create_task(slots.reserve(flow("a")))
    await asyncio.sleep(0)
    left.cancel()
    slots.release()  # in the same turn: the waiter is cancelled, its task has not run yet
    with pytest.raises(asyncio.CancelledError):
        await left
    assert not slots.contended
    assert await _taken_at_once(slots)
    closing = asyncio.create_task(slots.reserve(flow("b")))
    await slots.reserve(ANYONE)
    await asyncio.sleep(0)
    closing.cancel()
    slots.close()  # likewise: nothing left to refuse
    with pytest.raises(asyncio.CancelledError):
        await closing


async def test_waits_that_ended_are_pruned_from_the_queue() -> None:
    loop = asyncio.get_running_loop()
    slots = WeightedSlots(1)
    await slots.reserve()
    for n in range(5000):
        with pytest.raises(TimeoutError):
            await slots.reserve(flow(f"team-{n % 7}"), loop.time())  # no place freed meanwhile
    assert len(slots._queue) < 2048
    slots.release()
    assert await _taken_at_once(slots)


async def test_closed_slots_refuse_those_waiting_and_those_to_come() -> None:
    slots = WeightedSlots(1)
    await slots.reserve()
    waiting = asyncio.create_task(slots.reserve(flow("a", priority=Priority.HIGH)))
    await asyncio.sleep(0)
    slots.close()
    with pytest.raises(SlotsClosed):
        await waiting
    slots.release()  # the running attempt ends: its slot goes to no one
    with pytest.raises(SlotsClosed):
        await slots.reserve()


def test_past_a_herds_early_permits_a_reserve_is_left_for_the_teams_holding_few() -> None:
    permits = Permits(100)
    assert all(permits.try_reserve(Flow(team="herd")) for _ in range(100))
    assert not permits.try_reserve(
        Flow(team="herd")
    )  # the herd has the limit: the reserve is not its
    # Each other team gets up to a tenth of the reserve (10 permits: 1 each).
    assert permits.try_reserve(Flow(team="small-a"))
    assert not permits.try_reserve(Flow(team="small-a"))
    assert all(permits.try_reserve(Flow(team=f"small-{n}")) for n in range(9))
    assert not permits.try_reserve(Flow(team="small-x"))  # the reserve is spent
    permits.release(Flow(team="small-a"))
    assert permits.try_reserve(Flow(team="small-x"))
    for _ in range(100):
        permits.release(Flow(team="herd"))
    permits.release(Flow(team="herd"))  # given back once only: nothing more is freed
    assert sum(permits.try_reserve(Flow(team="herd")) for _ in range(200)) == 100 - 10


def test_without_a_reserve_a_small_limit_serves_first_come() -> None:
    permits = Permits(5)
    assert [permits.try_reserve(Flow(team="a")) for _ in range(6)] == [True] * 5 + [False]
    assert not permits.try_reserve(Flow(team="b"))
    permits.release(Flow(team="b"))  # never held one: frees nothing
    assert not permits.try_reserve(Flow(team="b"))
    permits.release(Flow(team="a"))
    assert permits.try_reserve(Flow(team="b"))


async def test_a_reservation_gives_its_place_back_once_and_permits_are_never_waited_for() -> None:
    slots = WeightedSlots(1)
    with await slots.reserved(Flow(team="a")) as held:
        assert not slots.try_reserve()
        held.release()
    # Released by the call and again on leaving the block: one place freed, not two.
    assert slots.try_reserve()
    assert not slots.try_reserve()
    permits = Permits(1)
    held = await permits.reserved(Flow(team="a"))
    with pytest.raises(TimeoutError):  # none free: the wait ends at once
        await permits.reserve(Flow(team="a"))
    held.release()
    assert permits.try_reserve(Flow(team="b"))


# --- any sequence of takes, releases, cancellations and deadlines ----------------------------


@dataclass
class Waiter:
    team: str
    n: int  # arrival order
    task: asyncio.Task[None] = field(init=False)
    held: bool = False
    queued: bool = False  # no slot was free as it came: it waited in the queue


_steps = st.lists(
    st.one_of(
        st.tuples(st.just("take"), st.sampled_from("abc"), st.integers(1, 3), st.booleans()),
        st.tuples(st.just("release")),
        st.tuples(st.just("cancel"), st.integers(0, 200)),
        st.tuples(st.just("turn")),
        st.tuples(st.just("tick")),
    ),
    max_size=60,
)


@given(st.integers(1, 3), _steps)
def test_no_place_is_lost_or_given_twice_and_each_team_keeps_its_order(
    limit: int, steps: list[tuple[object, ...]]
) -> None:
    asyncio.run(_play(limit, steps))


async def _play(limit: int, steps: list[tuple[object, ...]]) -> None:
    loop = asyncio.get_running_loop()
    slots = WeightedSlots(limit)
    waiters: list[Waiter] = []
    granted: list[Waiter] = []

    async def take(w: Waiter, weight: int, deadline: float) -> None:
        w.queued = not slots.try_reserve()
        if w.queued:
            await slots.reserve(flow(w.team, weight), deadline)
        w.held = True
        granted.append(w)

    def holders() -> list[Waiter]:
        return [w for w in waiters if w.held]

    for step in steps:
        if step[0] == "take":
            _, team, weight, soon = step
            w = Waiter(str(team), len(waiters))
            deadline = loop.time() + (0.002 if soon else 60)
            w.task = loop.create_task(take(w, int(weight), deadline))  # type: ignore[call-overload]
            waiters.append(w)
        elif step[0] == "release" and holders():
            holder = holders()[0]
            holder.held = False
            slots.release()
        elif step[0] == "cancel" and (pending := [w for w in waiters if not w.task.done()]):
            pending[int(step[1]) % len(pending)].task.cancel()  # type: ignore[call-overload]
        elif step[0] == "turn":  # the tasks run; without it, the next step comes in this turn
            await asyncio.sleep(0)
        elif step[0] == "tick":
            await asyncio.sleep(0.003)
        assert len(holders()) <= limit
    # Every place comes back; every waiter still waiting gets one in the end.
    while any(not w.task.done() for w in waiters) or holders():
        for holder in holders():
            holder.held = False
            slots.release()
        await asyncio.sleep(0.001)
    served = Counter(id(w) for w in granted)
    assert all(count == 1 for count in served.values())
    for team in "abc":  # those that queued got their slots in their order of arrival
        order = [w.n for w in granted if w.team == team and w.queued]
        assert order == sorted(order)
    for w in waiters:
        assert w in granted or w.task.cancelled() or isinstance(w.task.exception(), TimeoutError)
    for _ in range(limit):
        await slots.reserve(ANYONE, loop.time())  # all free again
    assert not slots.contended
