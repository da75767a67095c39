"""Times as the viewer reads them: on their own zone's wall clock, with UTC alongside.

The viewer's zone is the session's (the browser's, sent at sign-in, or chosen in the page
header); an unknown name falls back to UTC. Each time is a ``<time>`` element whose
``datetime`` is the UTC instant, so the page stays exact whatever is shown.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from markupsafe import Markup, escape

NONE = "-"


@lru_cache(maxsize=64)
def zone_of(name: str) -> ZoneInfo:
    """The zone named, or UTC for a name that is not an IANA zone."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def known_zone(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


@lru_cache(maxsize=1)
def zone_names() -> tuple[str, ...]:
    """The IANA zones, for the picker: ``UTC`` first, then by name."""
    return ("UTC", *sorted(z for z in available_timezones() if "/" in z and z != "UTC"))


def instant(value: Timestamp) -> datetime:
    return value.ToDatetime(UTC)


def _clock(moment: datetime) -> str:
    text = moment.strftime("%Y-%m-%d %H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond // 1000:03d}"
    return text


def local_and_utc(moment: datetime, zone: str) -> tuple[str, str]:
    """``moment`` on ``zone``'s wall clock with its abbreviation (``2026-12-06 10:30:00
    CET``), and in UTC (``2026-12-06 09:30:00Z``)."""
    utc = moment.astimezone(UTC)
    local = utc.astimezone(zone_of(zone))
    return f"{_clock(local)} {local.tzname()}", f"{_clock(utc)}Z"


def at(moment: datetime | None, zone: str) -> Markup:
    """A ``<time>`` element: the viewer's wall clock, and UTC beside it unless they are one."""
    if moment is None:
        return Markup(NONE)
    local, utc = local_and_utc(moment, zone)
    iso = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if zone_of(zone).key == "UTC":
        return Markup('<time datetime="{}">{}</time>').format(iso, utc)
    return Markup('<time datetime="{}">{}</time> <span class="utc">{}</span>').format(
        iso, local, utc
    )


def field_at(message: Message, name: str, zone: str) -> Markup:
    """A Timestamp field of ``message`` as ``at``; ``-`` when unset."""
    if not message.HasField(name):
        return Markup(NONE)
    return at(instant(getattr(message, name)), zone)


def ago(moment: datetime, now: datetime) -> str:
    """How long before ``now`` (``3m ago``), or after it (``in 2h``), roughly."""
    delta = now - moment
    future = delta < timedelta(0)
    seconds = int(abs(delta).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            text = f"{seconds // size}{unit}"
            break
    else:
        text = f"{seconds}s"
    return f"in {text}" if future else f"{text} ago"


def escape_text(value: object) -> Markup:
    return escape(value)
