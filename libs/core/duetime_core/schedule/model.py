"""The three kinds of schedule, as the time code sees them.

These are the evaluated forms: a one-off "at a local time" or "after a delay" has already been
resolved to an instant, so everything here is either a UTC instant or a cron rule in a zone.
A series (an interval, a cron rule) may end: it has no occurrence after its ``end_time``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, timedelta


class GapPolicy(enum.StrEnum):
    """What a fixed local time does on the spring-forward night, when it does not exist."""

    SHIFT = "SHIFT"  # run at the first instant after the gap (the default, as Debian cron)
    SKIP = "SKIP"  # no occurrence that night


class FoldPolicy(enum.StrEnum):
    """What a fixed local time does on the fall-back night, when it happens twice."""

    FIRST = "FIRST"  # once, at the first pass (the default, as Debian cron)
    LAST = "LAST"  # once, at the second pass
    BOTH = "BOTH"  # twice


@dataclass(frozen=True)
class OneOff:
    """A single occurrence; "at a time" and "after a delay" both become this at create time."""

    at: datetime  # aware


@dataclass(frozen=True)
class Interval:
    """Occurrences at ``anchor + k * every`` for every integer ``k >= 0``, up to ``end_time``
    (inclusive) when one is set."""

    every: timedelta  # > 0
    anchor: datetime  # aware
    end_time: datetime | None = None  # aware


@dataclass(frozen=True)
class Cron:
    """A cron expression matched on the wall clock of an IANA zone.

    ``gap`` and ``fold`` apply only to fixed-time expressions (see ``is_fixed_time``); ``None``
    means the default (``SHIFT``, ``FIRST``). No occurrence falls after ``end_time`` (an
    instant; inclusive) when one is set.
    """

    expression: str  # 5 fields, or 6 with leading seconds
    time_zone: str  # IANA name
    gap: GapPolicy | None = None
    fold: FoldPolicy | None = None
    end_time: datetime | None = None  # aware


Schedule = OneOff | Interval | Cron
