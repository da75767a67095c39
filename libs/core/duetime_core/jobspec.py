"""A job's definition as users write it, and the domain enums around it.

The stored schedule keeps the user's own form (a delay, a local time) so the API can return
what was asked; ``to_schedule`` turns it into the pure ``Schedule`` the time code works on.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from duetime_core.schedule.model import Cron, FoldPolicy, GapPolicy, Interval, OneOff, Schedule


class JobState(enum.StrEnum):
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    COMPLETED = "COMPLETED"
    ERROR = "ERROR"
    # Never shown: a deleted job keeps its row so its run history stays readable.
    DELETED = "DELETED"


class MisfirePolicy(enum.StrEnum):
    RUN_ONCE = "RUN_ONCE"
    RUN_ALL = "RUN_ALL"
    SKIP = "SKIP"


class OverlapPolicy(enum.StrEnum):
    ALLOW = "ALLOW"
    SKIP = "SKIP"
    BUFFER_ONE = "BUFFER_ONE"
    CANCEL_PREVIOUS = "CANCEL_PREVIOUS"


class Priority(enum.StrEnum):
    HIGH = "HIGH"
    NORMAL = "NORMAL"
    LOW = "LOW"


class Delivery(enum.StrEnum):
    """What an attempt whose outcome cannot be known means for its run (see
    ``duetime_core.attempts``): retried (at least once), or never (at most once)."""

    AT_LEAST_ONCE = "AT_LEAST_ONCE"
    AT_MOST_ONCE = "AT_MOST_ONCE"


class HttpMethod(enum.StrEnum):
    GET = "GET"
    POST = "POST"
    PUT = "PUT"
    PATCH = "PATCH"
    DELETE = "DELETE"


# The instants a schedule may name (a one-off's time, an interval's start, a preview's start):
# protobuf's Timestamp range, years 1 to 9999, less a few days at each end, so that whatever
# is computed from them (a jitter offset of up to an hour, a time zone's offset, the instant
# just before one, PostgreSQL's and Python's own limits) stays in range. Outside it a request
# is refused, before anything is stored.
EARLIEST_INSTANT = datetime(1, 1, 4, tzinfo=UTC)
LATEST_INSTANT = datetime(9999, 12, 28, tzinfo=UTC)


def instant_problem(at: datetime) -> str | None:
    """Why ``at`` cannot be scheduled (None: it can)."""
    if not EARLIEST_INSTANT <= at <= LATEST_INSTANT:
        return (
            f"must be between {EARLIEST_INSTANT.date().isoformat()} and "
            f"{LATEST_INSTANT.date().isoformat()} (UTC), got {at.isoformat()}"
        )
    return None


@dataclass(frozen=True)
class AtInstant:
    at: datetime


@dataclass(frozen=True)
class AtLocal:
    local_time: datetime  # naive wall-clock time
    time_zone: str
    gap: GapPolicy | None
    fold: FoldPolicy | None
    resolved: datetime  # the UTC instant it resolved to at create/update time


@dataclass(frozen=True)
class AfterDelay:
    delay: timedelta
    resolved: datetime


@dataclass(frozen=True)
class Every:
    interval: timedelta
    start_time: datetime | None
    anchor: datetime  # start_time, or the creation time when none was given
    end_time: datetime | None = None


ScheduleSpec = AtInstant | AtLocal | AfterDelay | Every | Cron
# The schedules that repeat, and so may end (``end_time``, ``JobSpec.max_runs``).
Series = Every | Cron


def to_schedule(spec: ScheduleSpec) -> Schedule:
    """The pure schedule the time code evaluates."""
    match spec:
        case AtInstant(at=at):
            return OneOff(at=at)
        case AtLocal(resolved=resolved) | AfterDelay(resolved=resolved):
            return OneOff(at=resolved)
        case Every(interval=interval, anchor=anchor, end_time=end_time):
            return Interval(every=interval, anchor=anchor, end_time=end_time)
        case Cron():
            return spec


def is_one_off(spec: ScheduleSpec) -> bool:
    return isinstance(spec, AtInstant | AtLocal | AfterDelay)


def same_series(stored: ScheduleSpec, written: ScheduleSpec) -> bool:
    """Whether ``written`` (just read, its defaults resolved at the update's "now") asks for
    the ``stored`` series of occurrences, whatever its end: an interval that names no start
    keeps the anchor it was given by default, a delay the run time it resolved to."""
    match stored, written:
        case Every(), Every(start_time=None):
            return stored.start_time is None and stored.interval == written.interval
        case AfterDelay(), AfterDelay():
            return stored.delay == written.delay
        case ((Every() | Cron()), (Every() | Cron())):
            return dataclasses.replace(stored, end_time=None) == dataclasses.replace(
                written, end_time=None
            )
        case _:
            return stored == written


def updated_schedule(stored: ScheduleSpec, written: ScheduleSpec) -> ScheduleSpec:
    """The schedule an update stores: ``written``; or, when it names the stored series again,
    the stored one (its anchor kept) with ``written``'s end."""
    if not same_series(stored, written):
        return written
    if isinstance(stored, Series) and isinstance(written, Series):
        return dataclasses.replace(stored, end_time=written.end_time)
    return stored


# AES-GCM's nonce and tag, around the ciphertext of a sealed value.
SEALED_OVERHEAD = 12 + 16


@dataclass(frozen=True)
class Sealed:
    """A secret value (a header's or an env variable's) as it is stored: encrypted under the
    key ``key_id`` names. Only the holder of that key can read it; everyone else keeps it as
    it is, so a job read from the store and written back never needs the secret in clear."""

    key_id: str
    data: bytes  # nonce, ciphertext, tag

    @property
    def size(self) -> int:
        """The value's length in bytes (UTF-8), which encryption does not hide."""
        return max(0, len(self.data) - SEALED_OVERHEAD)


# A secret as a request gives it (clear), or as the store keeps it (sealed).
SecretValue = str | Sealed


def secret_size(value: SecretValue) -> int:
    return value.size if isinstance(value, Sealed) else len(value.encode())


class CallSigning(enum.StrEnum):
    """How a call proves it came from Duetime (``duetime_infra.signing``)."""

    OFF = "OFF"
    WEBHOOK = "WEBHOOK"
    ID_TOKEN = "ID_TOKEN"
    WEBHOOK_AND_ID_TOKEN = "WEBHOOK_AND_ID_TOKEN"

    @property
    def webhook(self) -> bool:
        return self in (CallSigning.WEBHOOK, CallSigning.WEBHOOK_AND_ID_TOKEN)

    @property
    def id_token(self) -> bool:
        return self in (CallSigning.ID_TOKEN, CallSigning.WEBHOOK_AND_ID_TOKEN)


@dataclass(frozen=True)
class HttpTarget:
    method: HttpMethod
    url: str
    headers: dict[str, SecretValue] = field(default_factory=dict)
    body: bytes = b""
    # None: the team's default.
    signing: CallSigning | None = None
    # The ID token's audience; empty: the URL.
    token_audience: str = ""


@dataclass(frozen=True)
class ContainerTarget:
    image: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: dict[str, SecretValue] = field(default_factory=dict)


Target = HttpTarget | ContainerTarget


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 3
    initial_backoff: timedelta = timedelta(seconds=1)
    max_backoff: timedelta = timedelta(minutes=5)
    multiplier: float = 2.0


@dataclass(frozen=True)
class MisfireSettings:
    policy: MisfirePolicy = MisfirePolicy.RUN_ONCE
    threshold: timedelta = timedelta(seconds=60)
    max_catch_up_runs: int = 100
    max_catch_up_age: timedelta = timedelta(hours=24)


DEFAULT_ATTEMPT_TIMEOUT = timedelta(minutes=5)


@dataclass(frozen=True)
class JobSpec:
    """Everything a user defines about a job; validated before it is built."""

    display_name: str
    schedule: ScheduleSpec
    target: Target
    attempt_timeout: timedelta = DEFAULT_ATTEMPT_TIMEOUT
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    misfire: MisfireSettings = field(default_factory=MisfireSettings)
    overlap: OverlapPolicy = OverlapPolicy.ALLOW
    jitter_window: timedelta = timedelta(0)
    priority: Priority = Priority.NORMAL
    delivery: Delivery = Delivery.AT_LEAST_ONCE
    labels: dict[str, str] = field(default_factory=dict)
    # At most this many runs of the schedule (a series only; None: no limit). With the
    # schedule's end_time, where the job's schedule ends: ``duetime_core.ending``.
    max_runs: int | None = None
    # The team's calendars (ids) whose days the schedule's occurrences skip, recorded SKIPPED
    # (CALENDAR) by the claim: ``duetime_core.calendars``, docs/calendars.md.
    excluded_calendars: tuple[str, ...] = ()


PARTITIONS = 1024
