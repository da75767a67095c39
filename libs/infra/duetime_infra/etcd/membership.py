"""Where schedulers and partition owners live in etcd, and reading them back.

Under a prefix (``/duetime/`` by default):

- ``<prefix>schedulers/<scheduler_id>``: one key per live scheduler, bound to its lease;
  the value is the scheduler id.
- ``<prefix>partitions/<0000..1023>``: the owner of a partition, bound to the owner's lease;
  the value is the owner's scheduler id, the key's create_revision its fencing revision.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from duetime_infra.etcd.gateway import KeyRecord, RangeSnapshot


@dataclass(frozen=True)
class Ownership:
    """Who is live and which partitions are held, as of one etcd revision."""

    revision: int
    members: frozenset[str]
    holders: dict[int, KeyRecord]


class KeyLayout:
    def __init__(self, prefix: str, partitions: int) -> None:
        if not prefix.endswith("/"):
            raise ValueError(f"the etcd prefix must end with '/', got {prefix!r}")
        self.root = prefix
        self.members_prefix = f"{prefix}schedulers/"
        self.partitions_prefix = f"{prefix}partitions/"
        self.partitions = partitions

    def member_key(self, scheduler_id: str) -> str:
        if not scheduler_id or "/" in scheduler_id:
            raise ValueError(f"a scheduler id must be non-empty without '/', got {scheduler_id!r}")
        return f"{self.members_prefix}{scheduler_id}"

    def partition_key(self, partition: int) -> str:
        if not 0 <= partition < self.partitions:
            raise ValueError(f"partition {partition} is outside 0..{self.partitions - 1}")
        return f"{self.partitions_prefix}{partition:04d}"

    def member_of(self, key: str) -> str | None:
        """The scheduler id a member key names, None for any other key."""
        if not key.startswith(self.members_prefix):
            return None
        name = key[len(self.members_prefix) :]
        return name if name and "/" not in name else None

    def partition_of(self, key: str) -> int | None:
        """The partition a partition key names, None for any other key."""
        if not key.startswith(self.partitions_prefix):
            return None
        suffix = key[len(self.partitions_prefix) :]
        if len(suffix) != 4 or not suffix.isdigit():
            return None
        partition = int(suffix)
        return partition if partition < self.partitions else None

    def ownership(self, snapshot: RangeSnapshot) -> Ownership:
        """Members and partition holders from one read of the whole prefix."""
        return Ownership(
            revision=snapshot.revision,
            members=frozenset(self._members(snapshot.records)),
            holders={
                partition: record
                for record in snapshot.records
                if (partition := self.partition_of(record.key)) is not None
            },
        )

    def _members(self, records: Iterable[KeyRecord]) -> Iterable[str]:
        for record in records:
            member = self.member_of(record.key)
            if member is not None:
                yield member
