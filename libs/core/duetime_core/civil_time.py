"""Wall-clock (civil) times in IANA zones: turning a local time into the instant it names.

A wall-clock time can name no instant (the spring-forward gap), one, or two (the fall-back
fold). Both cases are found by asking zoneinfo, never from a table of transition dates: a time
is in a gap when neither reading of it (``fold=0`` / ``fold=1``) survives a round trip through
UTC, and in a fold when both do but name different instants.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

# Zones come from the same loader the fire-time code uses (the pinned tzdata, not the host's),
# so a one-off's local time and a cron job in the same zone agree on every machine.
from duetime_core.schedule import load_zone
from duetime_core.schedule.model import FoldPolicy, GapPolicy


def _wall(instant: datetime, zone: ZoneInfo) -> datetime:
    """The naive wall-clock reading of an instant in ``zone``."""
    return instant.astimezone(zone).replace(tzinfo=None, fold=0)


def _gap_end(before: datetime, after: datetime, zone: ZoneInfo) -> datetime:
    """The first instant in ``(before, after]`` whose UTC offset differs from ``before``'s.

    Zone transitions sit on whole seconds in practice, but searching integer microseconds
    makes the answer exact whatever the data says; 40 halvings cover any real gap.
    """
    offset = before.astimezone(zone).utcoffset()
    lo = 0
    hi = (after - before) // timedelta(microseconds=1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if (before + timedelta(microseconds=mid)).astimezone(zone).utcoffset() == offset:
            lo = mid
        else:
            hi = mid
    return before + timedelta(microseconds=hi)


def resolve_local(
    local: datetime,
    time_zone: str,
    gap: GapPolicy | None,
    fold: FoldPolicy | None,
) -> datetime | None:
    """The UTC instant at which the wall clocks of ``time_zone`` show ``local``.

    * In a spring-forward gap the time never shows: ``SHIFT`` (the default, ``None``) gives the
      first instant after the gap (02:30 on a night jumping 02:00 -> 03:00 gives 03:00 local),
      ``SKIP`` gives None.
    * In a fall-back fold it shows twice: ``FIRST`` (the default) gives the first pass, ``LAST``
      the second. ``BOTH`` names two instants, not one: ValueError.

    Raises ValueError for an aware ``local``, an unknown zone, or a time whose instant falls
    outside the range ``datetime`` can hold.
    """
    if local.tzinfo is not None:
        raise ValueError("local time must be naive (a wall-clock reading without offset)")
    if fold is FoldPolicy.BOTH:
        raise ValueError("fold policy BOTH names two instants, not one")
    zone = load_zone(time_zone)
    try:
        first = local.replace(tzinfo=zone, fold=0).astimezone(UTC)
        second = local.replace(tzinfo=zone, fold=1).astimezone(UTC)
        first_ok = _wall(first, zone) == local
        second_ok = _wall(second, zone) == local
    except OverflowError as exc:
        raise ValueError(f"{local.isoformat()} in {time_zone} is out of range") from exc

    if first_ok and second_ok:
        if first == second:
            return first
        # A fold: fold=0 is the earlier offset's reading, but order by the instants
        # themselves so a zone whose offset falls the "wrong" way is still right.
        earlier, later = sorted((first, second))
        return later if fold is FoldPolicy.LAST else earlier
    if first_ok or second_ok:
        # Not seen in real zone data; trust the reading that round-trips.
        return first if first_ok else second

    # A gap. The two readings use the offsets either side of the transition, so the
    # transition instant lies between them.
    if gap is GapPolicy.SKIP:
        return None
    earlier, later = sorted((first, second))
    return _gap_end(earlier, later, zone)
