"""Attempt counts logged once a second instead of a line per run.

In a :00 herd a worker starts and finishes thousands of attempts a second, and a JSON log line
for each start and each success would cost a noticeable share of its CPU. What an operator
reads from those lines in bulk is how many started, succeeded, failed and were refused, so that
is one INFO line per second with activity; a failure, a refusal or a dropped message is still
logged on its own, with its run id, and the per-run lines stay at DEBUG.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter

log = logging.getLogger(__name__)

# Seconds between summaries while attempts keep coming; none is logged for a quiet second.
SUMMARY_INTERVAL = 1.0

# What is counted: an attempt started here, and how those that finished ended.
STARTED = "started"
SUCCEEDED = "succeeded"
FAILED = "failed"
TIMED_OUT = "timed_out"
CANCELLED = "cancelled"
HANDED_BACK = "handed_back"
LEASE_LOST = "lease_lost"
# Messages whose start the scheduler refused (or that were dropped unstarted).
REFUSED = "refused"
DUPLICATES = "duplicates"


class AttemptTally:
    """Counts per kind, logged (and reset) ``interval`` seconds after the first count since the
    last summary. Needs a running event loop to count."""

    def __init__(self, interval: float = SUMMARY_INTERVAL) -> None:
        self._interval = interval
        self._counts: Counter[str] = Counter()
        self._timer: asyncio.TimerHandle | None = None

    def count(self, kind: str) -> None:
        self._counts[kind] += 1
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._interval, self.flush)

    @property
    def due(self) -> bool:
        """Whether a summary is scheduled (something was counted since the last one)."""
        return self._timer is not None

    def flush(self) -> None:
        """Logs the counts since the last summary, if any (also at shutdown)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._counts:
            return
        counts, self._counts = self._counts, Counter()
        log.info(
            "attempt counts",
            extra={"action": "attempts_summary", "seconds": self._interval, **counts},
        )
