"""Partition fencing: the last statement of every scheduler transaction that acts for a partition.

A token is ``(epoch, etcd create_revision)`` of the partition key. The store keeps the highest
token seen per partition; writing ours succeeds only if no newer owner has written a higher one,
so a scheduler that lost its partition (frozen, partitioned from etcd) cannot commit anything
for it: the failed check rolls its whole transaction back.
"""

from __future__ import annotations

from collections.abc import Iterable

from duetime_core.partitions import PartitionToken
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.sql import q
from duetime_infra.telemetry import instruments

# The token etcd ownership hands out is the token the store checks.
FencingToken = PartitionToken


class FencingLost(Exception):
    """A newer owner holds one of the partitions; the transaction must roll back."""

    def __init__(self, partitions: list[int]) -> None:
        super().__init__(f"partition ownership lost for {partitions}")
        self.partitions = partitions


async def fence(conn: Conn, tokens: Iterable[FencingToken], *, operation: str = "claim") -> None:
    """Raises-or-matches each partition's stored token; raises FencingLost if any is newer.

    Call it inside the transaction, last before COMMIT. A new owner calls it once on its own
    before its first claim, which is what "raise the token" means; afterwards its token is
    only share-locked (``fence_held``), so a claim writes no row here. ``operation`` names the
    transaction in the fencing-refusal metric.
    """
    wanted = {t.partition: t for t in tokens}
    if not wanted:
        return
    held = await _fenced(conn, "fence_held", wanted.values())
    raising = [t for p, t in wanted.items() if p not in held]
    raised = await _fenced(conn, "fence_partitions", raising) if raising else set()
    lost = sorted(set(wanted) - held - raised)
    if lost:
        instruments.fencing_refused(operation, "token")
        raise FencingLost(lost)


async def record_tokens(conn: Conn, tokens: Iterable[FencingToken], holder: str) -> dict[int, int]:
    """Records the tokens ``holder`` raises in this transaction (before ``fence``): the claim
    proof its runs refer to. Returns each partition's token id; rolled back with the raise if a
    newer owner holds one."""
    listed = list(tokens)
    rows = await conn.fetch(
        q("record_claim_tokens"),
        [t.partition for t in listed],
        [t.epoch for t in listed],
        [t.revision for t in listed],
        holder,
    )
    return {r["partition"]: r["token_id"] for r in rows}


async def _fenced(conn: Conn, query: str, tokens: Iterable[FencingToken]) -> set[int]:
    listed = list(tokens)
    rows = await conn.fetch(
        q(query),
        [t.partition for t in listed],
        [t.epoch for t in listed],
        [t.revision for t in listed],
    )
    return {r["partition"] for r in rows}
