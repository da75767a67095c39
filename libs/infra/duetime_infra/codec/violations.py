"""Collecting every bad field of a request before failing once.

Readers take a ``Violations`` and return a usable value even after recording a problem (the
default, or None where nothing sensible exists), so one bad field never hides the next; the
caller raises once at the end, when nothing built from a bad value can escape.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TypeVar

from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

from duetime_core.errors import FieldViolation, InvalidArgument
from duetime_core.jobspec import instant_problem
from duetime_infra.codec.timeconv import duration_to_timedelta, timestamp_to_datetime

E = TypeVar("E")
D = TypeVar("D")


class Violations:
    """The bad fields found so far, in the order found."""

    def __init__(self) -> None:
        self.items: list[FieldViolation] = []

    def add(self, field: str, description: str) -> None:
        self.items.append(FieldViolation(field, description))

    def __len__(self) -> int:
        return len(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise InvalidArgument(self.items)


def format_duration(td: timedelta) -> str:
    """A short human form in the largest exact unit: ``366d``, ``24h``, ``100ms``, ``1500us``."""
    if td < timedelta(0):
        return "-" + format_duration(-td)
    us = td // timedelta(microseconds=1)
    if us == 0:
        return "0s"
    for unit, size in (
        ("d", 86_400_000_000),
        ("h", 3_600_000_000),
        ("m", 60_000_000),
        ("s", 1_000_000),
        ("ms", 1000),
    ):
        # "24h" reads better than "1d"; days only from two on ("7d", "366d").
        if us % size == 0 and not (unit == "d" and us < 2 * size):
            return f"{us // size}{unit}"
    return f"{us}us"


def quote_key(key: str) -> str:
    """A map key inside a field path: ``headers["X-Foo"]``, escaped like a JSON string."""
    escaped = key.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in escaped) + '"'


def clip(text: str, limit: int = 64) -> str:
    """``text`` quoted for a message, cut short so a huge input cannot bloat the error."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def read_enum(v: Violations, field: str, raw: int, mapping: Mapping[int, E], default: D) -> E | D:
    """A proto enum number as a domain value: 0 (unspecified) is ``default``.

    proto3 enums are open, so any int32 arrives; an unknown one is recorded and reads as
    ``default`` so later checks still run.
    """
    if raw == 0:
        return default
    value = mapping.get(raw)
    if value is None:
        v.add(field, f"unknown value {raw}")
        return default
    return value


def read_timestamp(v: Violations, field: str, ts: Timestamp) -> datetime | None:
    """An instant a schedule may use (see ``instant_problem``), or None with the violation."""
    try:
        at = timestamp_to_datetime(ts)
    except ValueError as exc:
        v.add(field, str(exc))
        return None
    problem = instant_problem(at)
    if problem is not None:
        v.add(field, problem)
        return None
    return at


def read_duration(
    v: Violations,
    field: str,
    d: Duration,
    *,
    low: timedelta,
    high: timedelta,
) -> timedelta | None:
    """A duration within ``[low, high]``, or None after recording why not."""
    try:
        td = duration_to_timedelta(d)
    except ValueError as exc:
        v.add(field, str(exc))
        return None
    if not low <= td <= high:
        v.add(
            field,
            f"must be between {format_duration(low)} and {format_duration(high)}, "
            f"got {format_duration(td)}",
        )
        return None
    return td


def read_int(v: Violations, field: str, raw: int, *, low: int, high: int) -> int | None:
    if not low <= raw <= high:
        v.add(field, f"must be between {low} and {high}, got {raw}")
        return None
    return raw


def read_float(v: Violations, field: str, raw: float, *, low: float, high: float) -> float | None:
    if not math.isfinite(raw) or not low <= raw <= high:
        v.add(field, f"must be between {low} and {high}, got {raw}")
        return None
    return raw
