"""The scheduler's database clock as this worker sees it, to hold a message that is not due
yet without asking the scheduler again and again, and without holding an execution slot.

Every StartAttempt answer carries the server's time, read at some moment before the answer
arrived: early in the scheduler's transaction, which for a batch of starts under load can be
seconds before the answer is here. So each sample ``server_time - monotonic()`` (taken on
arrival) is at or below the true offset, short of it by that delay. The estimate is the largest
sample of the last ``WINDOW`` seconds: the one that lags least, and still never above the true
offset, so a held message is asked for as soon as it may be and never early by this estimate.
The two errors are not alike: asking early costs one more round trip (the scheduler answers
TOO_EARLY by its own clock and the message waits again), asking late makes every held message
late. Taking the last sample instead would let one slow answer make all of them late.

Offsets are counted against this process's monotonic clock, never the wall clock, so a step of
the host's clock (NTP, an operator) moves nothing. The window bounds how long old samples count:
if the server's clock itself steps back, or drifts against ours, the estimate follows it within
``WINDOW`` seconds (meanwhile the scheduler's TOO_EARLY keeps every start on time); when no
newer sample came for longer, the latest one is kept rather than none.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from google.protobuf.timestamp_pb2 import Timestamp

# Seconds a sample counts towards the estimate.
WINDOW = 30.0


class ServerClock:
    def __init__(
        self, monotonic: Callable[[], float] = time.monotonic, window: float = WINDOW
    ) -> None:
        self._monotonic = monotonic
        self._window = window
        # (received at, offset), received times rising and offsets falling: a sample that an
        # equal or larger later one outranks can never be the largest of a window again.
        self._samples: deque[tuple[float, float]] = deque()

    def observe(self, server_time: Timestamp) -> None:
        self.observe_ns(server_time.ToNanoseconds())

    def observe_ns(self, server_time: int) -> None:
        """A sample from an answer's server time, in nanoseconds since the epoch."""
        if not server_time:
            return  # an answer without a server time (an older scheduler): no sample
        now = self._monotonic()
        offset = server_time / 1e9 - now
        while self._samples and self._samples[-1][1] <= offset:
            self._samples.pop()
        self._samples.append((now, offset))

    def offset(self) -> float | None:
        """Server time minus this process's monotonic time; None before any answer."""
        if not self._samples:
            return None
        oldest = self._monotonic() - self._window
        while len(self._samples) > 1 and self._samples[0][0] < oldest:
            self._samples.popleft()
        return self._samples[0][1]

    def now_ns(self) -> int:
        """The server's clock now, as estimated, in nanoseconds since the epoch (this host's
        wall clock before any answer)."""
        offset = self.offset()
        if offset is None:
            return time.time_ns()
        return int((self._monotonic() + offset) * 1e9)

    def seconds_until(self, moment: Timestamp) -> float:
        """How long until ``moment`` on the server's clock; 0 when unknown or past."""
        return self.seconds_until_ns(moment.ToNanoseconds())

    def seconds_until_ns(self, moment: int) -> float:
        """``seconds_until`` a moment in nanoseconds since the epoch."""
        offset = self.offset()
        if offset is None:
            return 0.0
        return max(0.0, moment / 1e9 - (self._monotonic() + offset))
