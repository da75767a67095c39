"""Time values across the boundary: ``google.protobuf`` Timestamp/Duration <-> aware
``datetime`` / ``timedelta``, and the text forms of instants (RFC 3339 UTC) and of civil
local times (``YYYY-MM-DDTHH:MM[:SS[.ffffff]]``, no offset).

Microsecond-exact: the domain works in microseconds (what ``datetime`` and PostgreSQL hold),
so nanoseconds are rounded down on the way in and never invented on the way out. The
reading functions raise ValueError for values protobuf itself calls invalid (out of range,
nanos out of bounds) instead of the library's own helpers, which silently normalise them.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

# The ranges google/protobuf/timestamp.proto and duration.proto define as valid.
TIMESTAMP_MIN_SECONDS = -62_135_596_800  # 0001-01-01T00:00:00Z
TIMESTAMP_MAX_SECONDS = 253_402_300_799  # 9999-12-31T23:59:59Z
DURATION_MAX_SECONDS = 315_576_000_000  # about 10,000 years
_NANOS_PER_SECOND = 1_000_000_000

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def timestamp_to_datetime(ts: Timestamp) -> datetime:
    """The UTC instant of ``ts``, nanoseconds rounded down to microseconds."""
    if not TIMESTAMP_MIN_SECONDS <= ts.seconds <= TIMESTAMP_MAX_SECONDS:
        raise ValueError("timestamp out of range (years 0001 to 9999)")
    if not 0 <= ts.nanos < _NANOS_PER_SECOND:
        raise ValueError("timestamp nanos must be in [0, 999999999]")
    return _EPOCH + timedelta(seconds=ts.seconds, microseconds=ts.nanos // 1000)


def datetime_to_timestamp(dt: datetime, out: Timestamp | None = None) -> Timestamp:
    """``dt`` (aware) as a Timestamp; fills ``out`` when given (a message field)."""
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError("a naive datetime is not an instant")
    ts = out if out is not None else Timestamp()
    micros = (dt - _EPOCH) // timedelta(microseconds=1)
    seconds, micro = divmod(micros, 1_000_000)
    ts.seconds = seconds
    ts.nanos = micro * 1000
    return ts


def duration_to_timedelta(d: Duration) -> timedelta:
    """``d`` as a timedelta, rounded down (toward the past) to microseconds.

    Protobuf's rule for negative durations is kept: ``nanos`` carries the sign of ``seconds``
    (``-1.5s`` is ``seconds=-1, nanos=-500000000``). Rounding down rather than toward zero
    means a negative sliver never reads as zero and slips past a ``>= 0`` check.
    """
    if not -DURATION_MAX_SECONDS <= d.seconds <= DURATION_MAX_SECONDS:
        raise ValueError("duration out of range (about 10,000 years either way)")
    if not -_NANOS_PER_SECOND < d.nanos < _NANOS_PER_SECOND:
        raise ValueError("duration nanos must be in [-999999999, 999999999]")
    if (d.seconds > 0 and d.nanos < 0) or (d.seconds < 0 and d.nanos > 0):
        raise ValueError("duration seconds and nanos must have the same sign")
    return timedelta(seconds=d.seconds, microseconds=d.nanos // 1000)


def timedelta_to_duration(td: timedelta, out: Duration | None = None) -> Duration:
    """``td`` as a Duration (nanos with the sign of seconds); fills ``out`` when given."""
    d = out if out is not None else Duration()
    micros = td // timedelta(microseconds=1)
    sign = -1 if micros < 0 else 1
    seconds, micro = divmod(abs(micros), 1_000_000)
    d.seconds = sign * seconds
    d.nanos = sign * micro * 1000
    return d


def micros(td: timedelta) -> int:
    """A timedelta as whole microseconds (exact: timedelta has no finer unit)."""
    return td // timedelta(microseconds=1)


def format_rfc3339_utc(dt: datetime) -> str:
    """``2026-10-26T20:30:00.000000Z``: always UTC, always six fractional digits."""
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError("a naive datetime is not an instant")
    # isoformat, not strftime: strftime("%Y") does not pad years before 1000 on glibc.
    return dt.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def parse_rfc3339_utc(text: str) -> datetime:
    """The inverse of ``format_rfc3339_utc`` (also takes any offset ``fromisoformat`` does)."""
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        raise ValueError(f"instant without offset: {text!r}")
    return dt.astimezone(UTC)


# A civil date and time without offset: YYYY-MM-DDTHH:MM[:SS[.ffffff]]. ``[0-9]``, not
# ``\d``, which would also take Arabic-Indic and other Unicode digits.
_LOCAL_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2})"
    r"(?::([0-9]{2})(?:\.([0-9]{1,6}))?)?"
)
_OFFSET_SUFFIX = re.compile(r"[Zz]|[+-][0-9]{2}(?::?[0-9]{2})?")
LOCAL_TIME_FORMAT = "YYYY-MM-DDTHH:MM[:SS[.ffffff]]"


def parse_local_time(text: str, instant_field: str = "run_time") -> datetime:
    """A naive wall-clock time from ``2026-12-24T09:00[:00[.000000]]``; ValueError otherwise.

    An offset or ``Z`` is refused rather than ignored: it means the caller has an instant (for
    ``instant_field``), and silently dropping the offset would mean another time than theirs.
    """
    m = _LOCAL_TIME.fullmatch(text)
    if m is None:
        head = _LOCAL_TIME.match(text)
        if head is not None and _OFFSET_SUFFIX.fullmatch(text[head.end() :]):
            raise ValueError(
                "must not carry a UTC offset or Z: it is a wall-clock time read in time_zone; "
                f"set {instant_field} for an instant"
            )
        raise ValueError(f"expected {LOCAL_TIME_FORMAT}")
    year, month, day, hour, minute = (int(g) for g in m.group(1, 2, 3, 4, 5))
    second = int(m.group(6) or 0)
    micro = int((m.group(7) or "0").ljust(6, "0"))
    try:
        return datetime(year, month, day, hour, minute, second, micro)
    except ValueError as exc:
        raise ValueError(f"not a valid date and time: {exc}") from exc


def format_local_time(local: datetime) -> str:
    """The form ``parse_local_time`` reads: seconds always, a fraction only when not zero."""
    if local.tzinfo is not None:
        raise ValueError("a local time is naive")
    return local.replace(fold=0).isoformat()
