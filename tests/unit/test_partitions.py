"""Fair shares, per-member targets, preference orders and balancing moves."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from duetime_core.jobspec import PARTITIONS
from duetime_core.partitions import (
    PartitionToken,
    fair_share,
    member_target,
    plan_moves,
    preference_order,
)


@pytest.mark.parametrize(
    ("members", "share"),
    [(1, 1024), (2, 512), (3, 342), (4, 256), (5, 205), (7, 147), (1024, 1), (1025, 1)],
)
def test_fair_share_is_the_ceiling(members: int, share: int) -> None:
    assert fair_share(PARTITIONS, members) == share


def test_fair_share_rejects_no_members() -> None:
    with pytest.raises(ValueError, match="members"):
        fair_share(PARTITIONS, 0)


def test_three_members_split_342_341_341_by_id_order() -> None:
    ids = ["c", "a", "b"]
    assert [member_target(PARTITIONS, ids, m) for m in ("a", "b", "c")] == [342, 341, 341]


def test_a_member_missing_from_the_list_counts_itself() -> None:
    assert member_target(PARTITIONS, ["a"], "b") == 512
    assert member_target(PARTITIONS, [], "a") == 1024


@given(
    ids=st.sets(st.text(min_size=1, max_size=8), min_size=1, max_size=40),
    partitions=st.integers(min_value=0, max_value=5000),
)
def test_targets_cover_every_partition_and_never_exceed_the_fair_share(
    ids: set[str], partitions: int
) -> None:
    targets = [member_target(partitions, ids, m) for m in ids]
    assert sum(targets) == partitions
    assert max(targets) == fair_share(partitions, len(ids))
    assert max(targets) - min(targets) <= 1


def test_preference_order_is_a_stable_permutation_of_its_own_per_member() -> None:
    a = preference_order("scheduler-a", PARTITIONS)
    assert sorted(a) == list(range(PARTITIONS))
    assert preference_order("scheduler-a", PARTITIONS) == a
    b = preference_order("scheduler-b", PARTITIONS)
    assert a != b
    # Two members' first choices overlap about as much as random picks would (~1/3 here),
    # not wholesale, so members starting together rarely race for the same keys.
    overlap = len(set(a[:342]) & set(b[:342]))
    assert overlap < 200


def test_moves_acquire_free_partitions_in_preference_order() -> None:
    order = (5, 3, 1, 0, 2, 4)
    moves = plan_moves(owned={3}, free={0, 1, 4}, target=3, order=order)
    assert moves.need == 2
    assert moves.candidates == (1, 0, 4)
    assert moves.release == ()


def test_moves_release_the_least_preferred_extras() -> None:
    order = (5, 3, 1, 0, 2, 4)
    moves = plan_moves(owned={0, 1, 2, 3, 4, 5}, free=set(), target=4, order=order)
    assert moves.need == 0
    assert moves.release == (4, 2)
    assert moves.candidates == ()


def test_moves_at_target_do_nothing() -> None:
    moves = plan_moves(owned={1, 2}, free={0, 3}, target=2, order=(0, 1, 2, 3))
    assert (moves.need, moves.candidates, moves.release) == (0, (), ())


def test_tokens_compare_by_epoch_then_revision() -> None:
    old = PartitionToken(7, epoch=0, revision=900)
    rebuilt = PartitionToken(7, epoch=1, revision=5)
    assert old.fence < rebuilt.fence
    assert PartitionToken(7, 0, 10).fence < PartitionToken(7, 0, 11).fence
