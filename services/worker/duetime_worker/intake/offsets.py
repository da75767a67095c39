"""Kafka offsets committed only behind settled messages, shared by the worker's consumers.

Per partition, the commit position never passes a message still being handled, so a crash or
a rebalance redelivers what was not finished rather than losing it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import KafkaError
from google.protobuf.message import Message

log = logging.getLogger(__name__)

M = TypeVar("M", bound=Message)


class OffsetTracker:
    """Per partition: offsets handed out but not answered, and the next offset to commit."""

    def __init__(self) -> None:
        self._pending: dict[TopicPartition, set[int]] = {}
        self._next: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, int] = {}

    def add(self, tp: TopicPartition, offset: int) -> None:
        self._pending.setdefault(tp, set()).add(offset)

    def done(self, tp: TopicPartition, offset: int) -> None:
        pending = self._pending.get(tp)
        if pending is None or offset not in pending:
            return  # a partition revoked meanwhile
        pending.discard(offset)
        self._next[tp] = max(self._next.get(tp, 0), offset + 1)

    def committable(self, only: set[TopicPartition] | None = None) -> dict[TopicPartition, int]:
        out = {}
        for tp in set(self._pending) | set(self._next):
            if only is not None and tp not in only:
                continue
            pending = self._pending.get(tp)
            position = min(pending) if pending else self._next.get(tp)
            if position is not None and position > self._committed.get(tp, -1):
                out[tp] = position
        return out

    def committed(self, offsets: dict[TopicPartition, int]) -> None:
        self._committed.update(offsets)

    def forget(self, tps: set[TopicPartition]) -> None:
        for tp in tps:
            self._pending.pop(tp, None)
            self._next.pop(tp, None)
            self._committed.pop(tp, None)


class TrackedCommits:
    """Commits what an ``OffsetTracker`` allows, one commit at a time; a failed commit is
    logged and left for the next one."""

    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        self._consumer = consumer
        self.offsets = OffsetTracker()
        self._lock = asyncio.Lock()

    async def commit(self, only: set[TopicPartition] | None = None) -> None:
        async with self._lock:
            offsets = self.offsets.committable(only)
            if not offsets:
                return
            try:
                await self._consumer.commit(offsets)
            except KafkaError as error:
                log.warning(
                    "offset commit failed",
                    extra={"action": "commit_failed", "error": type(error).__name__},
                )
                return
            self.offsets.committed(offsets)


class _Committer(Protocol):
    offsets: OffsetTracker

    async def commit(self, only: set[TopicPartition] | None = None) -> None: ...


class CommitOnRevoke(ConsumerRebalanceListener):  # type: ignore[misc]
    """Gives up what is not settled of the partitions taken away (``give_up``: their messages
    go to the new owner, so this consumer must not go on with them), commits what is, then
    forgets them."""

    def __init__(
        self,
        owner: _Committer,
        give_up: Callable[[set[TopicPartition]], None] = lambda _: None,
    ) -> None:
        self._owner = owner
        self._give_up = give_up

    async def on_partitions_revoked(self, revoked: Any) -> None:
        self._give_up(set(revoked))
        await self._owner.commit(set(revoked))
        self._owner.offsets.forget(set(revoked))

    async def on_partitions_assigned(self, assigned: Any) -> None:
        log.info(
            "partitions assigned",
            extra={"action": "partitions_assigned", "partitions": len(assigned)},
        )


def decode_or_skip(record: Any, kind: type[M], offsets: OffsetTracker) -> M | None:
    """The record's message; an undecodable one is logged and settled at once, since no
    redelivery could make it readable."""
    try:
        return kind.FromString(record.value)
    except Exception:
        log.error(
            "undecodable message skipped",
            extra={"action": "bad_message", "topic": record.topic, "offset": record.offset},
        )
        tp = TopicPartition(record.topic, record.partition)
        offsets.add(tp, record.offset)
        offsets.done(tp, record.offset)
        return None
