"""Domain errors.

Every error the system reports on purpose is a ``DuetimeError``: it knows its gRPC status code
(by name, so core needs no gRPC import) and a machine-readable UPPER_SNAKE reason. One place in
infra turns these into ``google.rpc.Status`` with ``ErrorInfo`` and ``BadRequest`` details.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


class Code(enum.StrEnum):
    """The gRPC status codes Duetime uses, by their canonical names."""

    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    NOT_FOUND = "NOT_FOUND"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    ABORTED = "ABORTED"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    UNAVAILABLE = "UNAVAILABLE"
    INTERNAL = "INTERNAL"


@dataclass(frozen=True)
class FieldViolation:
    """One bad field: its path in the request (``job.schedule.cron.expression``) and why."""

    field: str
    description: str


@dataclass(frozen=True)
class QuotaViolation:
    """One quota a request would exceed (``google.rpc.QuotaFailure``): which, its limit, and
    the usage now."""

    quota: str  # e.g. "max_stored_jobs", "max_priority"
    limit: str
    usage: str
    description: str


class DuetimeError(Exception):
    """Base of every deliberate error; subclasses fix the code, callers pick the reason."""

    code: Code = Code.INTERNAL
    default_reason: str = "INTERNAL"

    def __init__(
        self,
        message: str,
        *,
        reason: str | None = None,
        metadata: Mapping[str, str] | None = None,
        quota_violations: Iterable[QuotaViolation] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason or self.default_reason
        self.metadata: dict[str, str] = dict(metadata or {})
        self.quota_violations = list(quota_violations)


class InvalidArgument(DuetimeError):
    """Bad input; carries every bad field at once, never just the first."""

    code = Code.INVALID_ARGUMENT
    default_reason = "INVALID_ARGUMENT"

    def __init__(
        self,
        violations: Iterable[FieldViolation],
        *,
        message: str | None = None,
        reason: str | None = None,
    ) -> None:
        self.violations = list(violations)
        if message is None:
            message = "; ".join(f"{v.field}: {v.description}" for v in self.violations)
        super().__init__(message or "invalid argument", reason=reason)

    @classmethod
    def field(cls, field: str, description: str) -> InvalidArgument:
        return cls([FieldViolation(field, description)])

    def prefixed(self, prefix: str) -> InvalidArgument:
        """The same violations with their field paths placed under ``prefix``."""
        return InvalidArgument(
            [
                FieldViolation(f"{prefix}.{v.field}" if v.field else prefix, v.description)
                for v in self.violations
            ],
            reason=self.reason,
        )


class NotFound(DuetimeError):
    code = Code.NOT_FOUND
    default_reason = "NOT_FOUND"


class AlreadyExists(DuetimeError):
    code = Code.ALREADY_EXISTS
    default_reason = "ALREADY_EXISTS"


class FailedPrecondition(DuetimeError):
    code = Code.FAILED_PRECONDITION
    default_reason = "FAILED_PRECONDITION"


class Aborted(DuetimeError):
    code = Code.ABORTED
    default_reason = "ABORTED"


class ResourceExhausted(DuetimeError):
    code = Code.RESOURCE_EXHAUSTED
    default_reason = "RESOURCE_EXHAUSTED"


class Unauthenticated(DuetimeError):
    code = Code.UNAUTHENTICATED
    default_reason = "UNAUTHENTICATED"


class PermissionDenied(DuetimeError):
    code = Code.PERMISSION_DENIED
    default_reason = "PERMISSION_DENIED"


class Unavailable(DuetimeError):
    """Try again later: answered with a ``google.rpc.RetryInfo`` of ``retry_delay`` seconds."""

    code = Code.UNAVAILABLE
    default_reason = "UNAVAILABLE"
    retry_delay: float = 1.0
