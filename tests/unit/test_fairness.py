"""Weighted fair order across teams (flows) and priorities."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from duetime_core.fairness import FairQueue, PriorityFairQueue
from duetime_core.jobspec import Priority


def test_a_small_flow_is_served_ahead_of_a_big_flows_backlog() -> None:
    fair: FairQueue[str, str] = FairQueue()
    for i in range(1000):
        fair.push("big", 1, f"big-{i}")
    for _ in range(3):
        fair.pop()  # the big flow alone has been served for a while
    fair.push("small", 1, "small-0")
    fair.push("small", 1, "small-1")
    order = [fair.pop() for _ in range(6)]
    # Within the next few turns both small items go, interleaved with the big flow.
    assert order.index("small-0") <= 1
    assert order.index("small-1") <= 3
    # First come first served within a flow.
    big = [o for o in order if o.startswith("big")]
    assert big == sorted(big, key=lambda o: int(o.split("-")[1]))


@given(st.integers(1, 10), st.integers(1, 10))
def test_backlogged_flows_get_turns_in_proportion_to_their_weights(wa: int, wb: int) -> None:
    fair: FairQueue[str, str] = FairQueue()
    for _ in range(500):
        fair.push("a", wa, "a")
        fair.push("b", wb, "b")
    turns = (wa + wb) * 20
    served = Counter(fair.pop() for _ in range(turns))
    assert served["a"] == pytest.approx(turns * wa / (wa + wb), abs=1)
    assert served["b"] == pytest.approx(turns * wb / (wa + wb), abs=1)


def test_an_idle_flow_cannot_save_up_turns() -> None:
    fair: FairQueue[str, str] = FairQueue()
    fair.push("a", 1, "a")
    fair.pop()
    for _ in range(100):
        fair.push("b", 1, "b")
    for _ in range(50):
        fair.pop()  # b alone for 50 turns; a was idle meanwhile
    for _ in range(10):
        fair.push("a", 1, "a")
    order = [fair.pop() for _ in range(10)]
    # a now shares turns with b instead of taking the next 10 in a row.
    assert 4 <= order.count("a") <= 6


def test_discarded_items_are_never_popped_and_fairness_carries_over_a_clear() -> None:
    fair: FairQueue[str, str] = FairQueue()
    fair.push("a", 1, "a1")
    fair.push("a", 1, "a2")
    fair.push("b", 1, "b1")
    assert fair.discard("a", "a1")
    assert not fair.discard("a", "nope")
    assert sorted([fair.pop(), fair.pop()]) == ["a2", "b1"]
    assert len(fair) == 0
    with pytest.raises(IndexError):
        fair.pop()
    for _ in range(10):
        fair.push("a", 1, "a")
    for _ in range(5):
        fair.pop()
    fair.clear()
    fair.push("a", 1, "a")
    fair.push("b", 1, "b")
    assert fair.pop() == "b"  # a was served more before the clear


def test_priorities_take_turns_by_weight_and_teams_share_within_a_priority() -> None:
    fair: PriorityFairQueue[str, tuple[Priority, str]] = PriorityFairQueue()
    for team in ("a", "b"):
        for priority in Priority:
            for _ in range(100):
                fair.push(priority, team, 1, (priority, team))
    served = Counter(fair.pop() for _ in range(70))
    by_priority = Counter(p for p, _ in served.elements())
    assert by_priority == {Priority.HIGH: 40, Priority.NORMAL: 20, Priority.LOW: 10}
    for priority in Priority:
        assert served[(priority, "a")] == served[(priority, "b")]


def test_items_no_longer_live_are_dropped_without_spending_their_flows_turn() -> None:
    gone: set[str] = set()
    fair: PriorityFairQueue[str, str] = PriorityFairQueue(lambda item: item not in gone)
    for i in range(4):
        fair.push(Priority.NORMAL, "a", 1, f"a{i}")
        fair.push(Priority.NORMAL, "b", 1, f"b{i}")
    gone |= {"a0", "a1", "a2"}
    # a's dead head is skipped and a keeps its turn: a3 goes next, not after b's next item.
    assert [fair.pop() for _ in range(3)] == ["a3", "b0", "b1"]
    gone |= {"b2"}
    fair.prune()
    assert len(fair) == 1
    assert fair.pop() == "b3"
    gone.add("x")
    fair.push(Priority.LOW, "c", 1, "x")
    with pytest.raises(IndexError):
        fair.pop()  # only a dead item left
    assert len(fair) == 0
