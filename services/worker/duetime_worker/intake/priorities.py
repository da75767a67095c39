"""The dispatch consumer's fetch round: the room for messages shared between the priorities by
weight (high 4, normal 2, low 1, at least one each), from records already fetched, and the
priority that picks first rotates by the same weights; what a priority leaves unused goes to
the others, and an idle round waits on all of them. So when several topics have messages, high
gets most of the room and low still moves.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from duetime_core.jobspec import Priority
from duetime_worker.herd.slots import WEIGHTS, TurnOrder


class PriorityFetch:
    """Fetch rounds from the partitions of ``topics`` (one a priority) ``consumer`` holds."""

    def __init__(self, consumer: AIOKafkaConsumer, topics: Mapping[Priority, str]) -> None:
        self._consumer = consumer
        self._priority_of_topic = {topic: priority for priority, topic in topics.items()}
        self._turns = TurnOrder()

    async def records(self, free: int) -> list[Any]:
        """At most ``free`` records, shared between the priorities by weight."""
        by_priority: dict[Priority, list[TopicPartition]] = {p: [] for p in WEIGHTS}
        for tp in self._consumer.assignment():
            priority = self._priority_of_topic.get(tp.topic)
            if priority is not None:
                by_priority[priority].append(tp)
        total = sum(WEIGHTS.values())
        records: list[Any] = []
        order = self._turns.next()
        # Weighted shares first, then what is left; prefetched records only.
        for share_of in (lambda w: max(1, math.ceil(free * w / total)), lambda w: free):
            for priority in order:
                budget = min(share_of(WEIGHTS[priority]), free - len(records))
                if budget <= 0 or not by_priority[priority]:
                    continue
                got = await self._consumer.getmany(
                    *by_priority[priority], timeout_ms=0, max_records=budget
                )
                for batch in got.values():
                    records.extend(batch)
        if not records:
            got = await self._consumer.getmany(timeout_ms=200, max_records=free)
            for batch in got.values():
                records.extend(batch)
        return records
