"""The attempt's deadline as a target is told it: the instant (RFC 3339, UTC) by which its
result must be known, and the seconds left until then (decimal, to the millisecond). HTTP calls
carry them as ``Duetime-Deadline`` and ``Duetime-Deadline-Seconds``; a launched process gets them
as ``DUETIME_DEADLINE`` and ``DUETIME_DEADLINE_SECONDS``."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from duetime_core.runkey import rfc3339_utc

DEADLINE_HEADER = "Duetime-Deadline"
DEADLINE_SECONDS_HEADER = "Duetime-Deadline-Seconds"


@dataclass(frozen=True)
class Deadline:
    at: float  # Unix time (the worker's wall clock)

    @classmethod
    def after(cls, seconds: float, now: float | None = None) -> Deadline:
        return cls((time.time() if now is None else now) + seconds)

    @classmethod
    def headers_after(cls, seconds: float) -> dict[str, str]:
        """The two headers of an HTTP call whose deadline is ``seconds`` from now, read at one
        instant: the seconds left are ``seconds``."""
        return {
            DEADLINE_HEADER: _rfc3339(time.time() + seconds),
            DEADLINE_SECONDS_HEADER: _seconds(seconds),
        }

    @property
    def rfc3339(self) -> str:
        """``2026-12-01T10:00:30.25Z``: truncated to the millisecond, never later than ``at``."""
        return _rfc3339(self.at)

    def seconds_left(self, now: float | None = None) -> str:
        return _seconds(self.at - (time.time() if now is None else now))


def _rfc3339(at: float) -> str:
    whole, millis = divmod(int(at * 1000), 1000)
    fraction = f".{millis:03d}".rstrip("0") if millis else ""
    return f"{_whole_second(whole)}{fraction}Z"


def _seconds(left: float) -> str:
    return f"{max(left, 0.0):.3f}"


@functools.lru_cache(maxsize=8)
def _whole_second(unix: int) -> str:
    """The whole second, without its ``Z``: the calls of a herd end within the same few
    seconds, and formatting it is most of a header's cost."""
    return rfc3339_utc(datetime.fromtimestamp(unix, UTC))[:-1]
