"""The last occurrence of a schedule strictly before an instant, found with the one time
function alone: a ``next_fire_time`` probe from an earlier start either lands before the
instant or not, and the latest start from which it still does yields the answer.

The search widens a window back from the instant by doubling until a probe lands inside it,
then bisects the start to the microsecond: about a hundred probes at most, whatever the
schedule's spacing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from duetime_core.schedule.model import Schedule
from duetime_core.schedule.next_fire import next_fire_time

_ONE_MICROSECOND = timedelta(microseconds=1)
_FIRST_WIDTH = timedelta(seconds=1)
# Nothing is looked for before this: datetime's own limit, with room for time zone offsets.
_EARLIEST = datetime(1, 1, 3, tzinfo=UTC)


def previous_fire_time(schedule: Schedule, before: datetime) -> datetime | None:
    """The latest occurrence strictly before ``before`` (aware), as aware UTC; None if there is
    none. Raises what ``next_fire_time`` raises for a schedule that cannot be evaluated."""
    before = before.astimezone(UTC)

    def lands(start: datetime) -> bool:
        found = next_fire_time(schedule, start)
        return found is not None and found < before

    width = _FIRST_WIDTH
    low = max(before - width, _EARLIEST)
    while not lands(low):
        if low <= _EARLIEST:
            return None
        width *= 2
        low = before - width if before - _EARLIEST > width else _EARLIEST
    # From ``low`` a probe lands before ``before``; from ``high`` (``before`` itself) it never
    # does. The answer is the probe from the latest start that still lands.
    high = before
    while high - low > _ONE_MICROSECOND:
        middle = low + (high - low) // 2
        if lands(middle):
            low = middle
        else:
            high = middle
    return next_fire_time(schedule, low)
