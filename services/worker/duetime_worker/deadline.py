"""The attempt's deadline as its target is told it, so the target can stop work Duetime has
already given up on: the instant the worker stops waiting for the call (the attempt's timeout,
counted from the call's start by the worker's clock), as RFC 3339 UTC, and the seconds left.

HTTP calls carry it as ``Duetime-Deadline`` and ``Duetime-Deadline-Seconds``; a launched
process gets the same two values in its environment.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

DEADLINE_HEADER = "Duetime-Deadline"
DEADLINE_SECONDS_HEADER = "Duetime-Deadline-Seconds"


@dataclass(frozen=True)
class Deadline:
    at: datetime  # aware, UTC
    seconds: float  # left when the call starts

    @property
    def rfc3339(self) -> str:
        """E.g. ``2026-10-26T20:30:05.250Z`` (milliseconds, UTC)."""
        return self.at.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    @property
    def seconds_text(self) -> str:
        """Decimal seconds to the millisecond, trailing zeros dropped: ``10``, ``0.25``."""
        return f"{max(self.seconds, 0.0):.3f}".rstrip("0").rstrip(".")

    def http_headers(self) -> dict[str, str]:
        return {DEADLINE_HEADER: self.rfc3339, DEADLINE_SECONDS_HEADER: self.seconds_text}


def deadline_in(limit: float, clock: Callable[[], float] = time.time) -> Deadline:
    """The deadline of a call that starts now and may take ``limit`` seconds."""
    return Deadline(datetime.fromtimestamp(clock() + limit, UTC), limit)
