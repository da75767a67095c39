"""The scheduler's database clock as this worker last saw it, to hold a message that is not due
yet without asking the scheduler again and again, and without holding an execution slot.

Every StartAttempt answer carries the server's time. The estimate (server time minus this
host's time when the answer arrived) runs behind the server by the answer's travel time, so a
message held until its effective time by this estimate is asked for a little late, never early;
the scheduler still decides (it answers TOO_EARLY before the effective time by its own clock).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from google.protobuf.timestamp_pb2 import Timestamp


class ServerClock:
    def __init__(self, wall: Callable[[], float] = time.time) -> None:
        self._wall = wall
        self._offset: float | None = None

    def observe(self, server_time: Timestamp) -> None:
        if server_time.seconds or server_time.nanos:
            self._offset = server_time.ToNanoseconds() / 1e9 - self._wall()

    def seconds_until(self, moment: Timestamp) -> float:
        """How long until ``moment`` on the server's clock; 0 when unknown or past."""
        if self._offset is None:
            return 0.0
        return max(0.0, moment.ToNanoseconds() / 1e9 - (self._wall() + self._offset))
