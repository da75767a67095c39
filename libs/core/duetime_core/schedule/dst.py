"""Time zones: loading them, and what a wall-clock reading means in one.

A naive wall-clock time names one instant, none (the spring-forward gap) or two (the
fall-back fold). zoneinfo answers this through ``fold``: ``fold=0`` reads the time with the
offset in force before the nearest transition, ``fold=1`` with the one after. When the two
readings agree the time is ordinary; when they differ, a reading that survives a round trip
through UTC marks a fold, and one that does not marks a gap. Transition instants are then
found by bisecting between the two readings, never from a table of dates.

Zones come from the pinned ``tzdata`` package, not the host's ``/usr/share/zoneinfo``: every
machine that computes a fire time must compute the same one, whatever its OS ships.
"""

from __future__ import annotations

import difflib
import enum
import functools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import resources
from zoneinfo import ZoneInfo

from duetime_core.schedule.model import FoldPolicy, GapPolicy

_ONE_SECOND = timedelta(seconds=1)
_ONE_DAY = timedelta(days=1)
# "Factory" is tzdata's placeholder for "zone not configured", not a place.
_NOT_REAL_ZONES = frozenset({"Factory"})


@functools.cache
def zone_names() -> frozenset[str]:
    """Every IANA name the pinned tzdata knows (links such as ``US/Eastern`` included)."""
    listing = resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8")
    return frozenset(listing.split()) - _NOT_REAL_ZONES


@functools.cache
def load_zone(name: str) -> ZoneInfo:
    """The zone called ``name``; ValueError, with a suggestion when one is close, if unknown."""
    if name not in zone_names():
        raise ValueError(_unknown_zone_message(name))
    data = resources.files("tzdata.zoneinfo").joinpath(*name.split("/"))
    with data.open("rb") as file:
        return ZoneInfo.from_file(file, key=name)


def _unknown_zone_message(name: str) -> str:
    by_case = {known.lower(): known for known in zone_names()}
    guess = by_case.get(name.lower())
    if guess is None:
        close = difflib.get_close_matches(name, zone_names(), n=1)
        guess = close[0] if close else None
    hint = f"; did you mean {guess!r}?" if guess else "; use an IANA name such as 'Europe/London'"
    return f"unknown time zone {name!r}{hint}"


class WallKind(enum.Enum):
    ORDINARY = "ORDINARY"  # names exactly one instant
    GAP = "GAP"  # skipped by the spring-forward jump: names no instant
    FOLD = "FOLD"  # repeated after the fall-back jump: names two instants


@dataclass(frozen=True, slots=True)
class WallReading:
    """What a naive local time means in a zone.

    ``earlier`` and ``later`` are UTC instants (aware): for ORDINARY both are the one
    instant; for FOLD the first and the second pass; for GAP they are the two fictitious
    readings either side of the jump, and the transition lies in ``(earlier, later]``.
    """

    kind: WallKind
    earlier: datetime
    later: datetime


def read_wall(local: datetime, zone: ZoneInfo) -> WallReading:
    """Classify the naive ``local`` in ``zone`` (see ``WallReading``)."""
    first_offset = local.replace(tzinfo=zone, fold=0).utcoffset()
    second_offset = local.replace(tzinfo=zone, fold=1).utcoffset()
    # ZoneInfo always answers for an aware time; the Optional is tzinfo's general contract.
    assert first_offset is not None
    assert second_offset is not None
    first = (local - first_offset).replace(tzinfo=UTC)
    if first_offset == second_offset:
        return WallReading(WallKind.ORDINARY, first, first)
    second = (local - second_offset).replace(tzinfo=UTC)
    earlier, later = (first, second) if first < second else (second, first)
    if wall_clock(first, zone) == local:
        return WallReading(WallKind.FOLD, earlier, later)
    return WallReading(WallKind.GAP, earlier, later)


def wall_clock(instant: datetime, zone: ZoneInfo) -> datetime:
    """The naive reading of the wall clocks of ``zone`` at ``instant``."""
    return instant.astimezone(zone).replace(tzinfo=None, fold=0)


def resolve_local(
    local: datetime, time_zone: str, gap: GapPolicy | None, fold: FoldPolicy | None
) -> datetime | None:
    """The UTC instant at which the wall clocks of ``time_zone`` show ``local`` (a one-off's
    local time; cron resolves its own wall times through ``read_wall`` the same way).

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
        reading = read_wall(local, zone)
        if reading.kind is WallKind.ORDINARY:
            return reading.earlier
        if reading.kind is WallKind.FOLD:
            return reading.later if fold is FoldPolicy.LAST else reading.earlier
        return (
            None if gap is GapPolicy.SKIP else transition_in(reading.earlier, reading.later, zone)
        )
    except OverflowError as exc:
        raise ValueError(f"{local.isoformat()} in {time_zone} is out of range") from exc


def offset_at(instant: datetime, zone: ZoneInfo) -> timedelta:
    offset = instant.astimezone(zone).utcoffset()
    assert offset is not None
    return offset


def transition_in(low: datetime, high: datetime, zone: ZoneInfo) -> datetime:
    """The first instant in ``(low, high]`` whose offset differs from ``low``'s.

    Assumes the offset changes once in the interval (callers bracket a single gap or fold);
    tzdata transitions fall on whole seconds, so bisecting seconds is exact.
    """
    low = low.replace(microsecond=0)  # transitions sit on whole seconds
    offset = offset_at(low, zone)
    lo, hi = 0, int((high - low) / _ONE_SECOND)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if offset_at(low + mid * _ONE_SECOND, zone) == offset:
            lo = mid
        else:
            hi = mid
    return low + hi * _ONE_SECOND


@dataclass(frozen=True, slots=True)
class Transition:
    at: datetime  # the first instant on the new offset (aware UTC)
    offset_before: timedelta
    offset_after: timedelta


def transitions_between(start: datetime, end: datetime, zone: ZoneInfo) -> list[Transition]:
    """The offset changes of ``zone`` in ``(start, end]``, probed day by day.

    Two changes less than a day apart that cancel out would be missed; tzdata has none since
    the 1940s, and the callers only need the DST nights of the coming years.
    """
    found: list[Transition] = []
    probe, offset = start, offset_at(start, zone)
    while probe < end:
        step = min(probe + _ONE_DAY, end)
        step_offset = offset_at(step, zone)
        if step_offset != offset:
            at = transition_in(probe, step, zone)
            found.append(Transition(at, offset, offset_at(at, zone)))
            step, step_offset = at, offset_at(at, zone)
        probe, offset = step, step_offset
    return found
