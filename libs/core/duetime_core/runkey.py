"""Run keys: what makes a run the same run, and the idempotency key targets see."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import uuid6

from duetime_core.jobspec import PARTITIONS

SCHEDULE_ORIGIN = "SCHEDULE"
TRIGGER_PREFIX = "TRIGGER:"
BACKFILL_PREFIX = "BACKFILL:"


def new_run_id() -> uuid.UUID:
    """A new run's id: a UUIDv7, led by the time it is made, so the runs and attempts made
    together sit together in their primary keys' pages, which fill as they are appended to
    instead of splitting in half where a random id falls (a uuid.UUID subclass)."""
    return uuid6.uuid7()


def rfc3339_utc(instant: datetime) -> str:
    """`2026-10-26T20:30:00Z`; fractional seconds only when present, so keys stay stable."""
    utc = instant.astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += f".{utc.microsecond:06d}".rstrip("0")
    return text + "Z"


@dataclass(frozen=True)
class RunKey:
    job_id: uuid.UUID
    nominal_time: datetime
    origin: str  # SCHEDULE, TRIGGER:<request_id> or BACKFILL:<request_id>

    @classmethod
    def scheduled(cls, job_id: uuid.UUID, nominal_time: datetime) -> RunKey:
        return cls(job_id, nominal_time, SCHEDULE_ORIGIN)

    @classmethod
    def triggered(cls, job_id: uuid.UUID, nominal_time: datetime, request_id: str) -> RunKey:
        return cls(job_id, nominal_time, TRIGGER_PREFIX + request_id)

    @classmethod
    def backfilled(cls, job_id: uuid.UUID, nominal_time: datetime, request_id: str) -> RunKey:
        """An occurrence run again by a backfill: a run of its own beside the scheduled run of
        the same instant, and one per occurrence per backfill request."""
        return cls(job_id, nominal_time, backfill_origin(request_id))

    @property
    def trigger_request_id(self) -> str | None:
        if self.origin.startswith(TRIGGER_PREFIX):
            return self.origin[len(TRIGGER_PREFIX) :]
        return None

    @property
    def backfill_request_id(self) -> str | None:
        if self.origin.startswith(BACKFILL_PREFIX):
            return self.origin[len(BACKFILL_PREFIX) :]
        return None

    def canonical(self) -> str:
        """The `Idempotency-Key` a target receives, identical for every attempt of the run."""
        request_id = self.trigger_request_id
        if request_id is not None:
            return f"{self.job_id}/trigger/{request_id}"
        nominal = rfc3339_utc(self.nominal_time)
        request_id = self.backfill_request_id
        if request_id is not None:
            return f"{self.job_id}/backfill/{request_id}/{nominal}"
        return f"{self.job_id}/{nominal}"


def backfill_origin(request_id: str) -> str:
    """The origin of the runs one BackfillJob request makes."""
    return BACKFILL_PREFIX + request_id


def partition_of(job_id: uuid.UUID) -> int:
    """stable_hash(job_id) % 1024: stable across processes and versions (not Python's hash)."""
    digest = hashlib.blake2b(job_id.bytes, digest_size=8).digest()
    return int.from_bytes(digest, "big") % PARTITIONS
