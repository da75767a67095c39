"""Kafka topic names: one dispatch topic per priority, and the dead-letter topic."""

from __future__ import annotations

from duetime_core.jobspec import Priority

DISPATCH_TOPICS: dict[Priority, str] = {
    Priority.HIGH: "duetime.runs.high",
    Priority.NORMAL: "duetime.runs.normal",
    Priority.LOW: "duetime.runs.low",
}
DEAD_LETTER_TOPIC = "duetime.deadletter"
# The local stack's broker (scripts/stack), where services look when not told otherwise.
DEFAULT_KAFKA_BOOTSTRAP = "127.0.0.1:59092"
