"""Partition ownership as pure arithmetic: fencing tokens, fair shares and who moves what.

The etcd adapter (``duetime_infra.etcd``) does the I/O; everything here is decided from plain
values so it can be tested on its own. A scheduler aims for its share of the partitions:
``ceil(partitions / members)`` at most, and exactly ``partitions // members`` plus one for the
first ``partitions % members`` members in id order, so the shares add up to every partition
and the split is as even as it can be (1,024 over 3 members: 342/341/341).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class PartitionToken:
    """The fencing token of one owned partition.

    ``revision`` is the etcd ``create_revision`` of the partition key, so every new owner gets
    a higher one; ``epoch`` is an operator setting, raised only if etcd is rebuilt from scratch
    (revisions restart then). Tokens compare as ``(epoch, revision)`` for one partition.
    """

    partition: int
    epoch: int
    revision: int

    @property
    def fence(self) -> tuple[int, int]:
        """What the store compares: a claim commits only if no higher fence was recorded."""
        return (self.epoch, self.revision)


def fair_share(partitions: int, members: int) -> int:
    """The most partitions one of ``members`` live schedulers should own: the ceiling."""
    if partitions < 0:
        raise ValueError(f"partitions must not be negative, got {partitions}")
    if members < 1:
        raise ValueError(f"members must be at least 1, got {members}")
    return -(-partitions // members)


def member_target(partitions: int, member_ids: Collection[str], member_id: str) -> int:
    """How many partitions ``member_id`` aims for among ``member_ids`` (it counts itself).

    The first ``partitions % n`` members in id order take one more than the rest, so the
    targets of all members add up to ``partitions`` exactly and none exceeds ``fair_share``.
    """
    ranked = sorted(set(member_ids) | {member_id})
    base, extra = divmod(partitions, len(ranked))
    return base + (1 if ranked.index(member_id) < extra else 0)


def preference_order(member_id: str, partitions: int) -> tuple[int, ...]:
    """Every partition once, in an order of its own for each member (rendezvous hashing).

    Members racing for the same free keys try them in different orders, so they rarely
    collide; a member keeps the partitions early in its order and releases the late ones.
    """

    def score(partition: int) -> bytes:
        return hashlib.blake2b(f"{member_id}/{partition}".encode(), digest_size=8).digest()

    return tuple(sorted(range(partitions), key=score))


@dataclass(frozen=True)
class Moves:
    """What one balancing pass should do.

    ``release``: owned partitions beyond the target, least preferred first. ``candidates``:
    free partitions in preference order; take ``need`` of them, moving on to the next ones
    when another member wins a race.
    """

    need: int
    candidates: tuple[int, ...]
    release: tuple[int, ...]


def plan_moves(
    owned: Collection[int], free: Collection[int], target: int, order: Sequence[int]
) -> Moves:
    """Moves towards ``target`` partitions, given what is owned and what nobody holds."""
    if target < 0:
        raise ValueError(f"target must not be negative, got {target}")
    rank = {partition: i for i, partition in enumerate(order)}
    surplus = len(owned) - target
    release: tuple[int, ...] = ()
    if surplus > 0:
        release = tuple(sorted(owned, key=lambda p: rank[p], reverse=True)[:surplus])
    need = max(0, -surplus)
    candidates = tuple(sorted(free, key=lambda p: rank[p])) if need else ()
    return Moves(need=need, candidates=candidates, release=release)
