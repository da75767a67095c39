"""Failures and exit codes: a gRPC status (or a local check) becomes a message that names the
bad fields (``google.rpc.BadRequest``) or the quota hit, its limit and usage
(``google.rpc.QuotaFailure``), and an exit code by status family that scripts can branch on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from duetime_cli.exits import ExitCode
from duetime_client.status import ErrorDetails, QuotaViolation, Violation

_BY_STATUS: dict[grpc.StatusCode, ExitCode] = {
    grpc.StatusCode.INVALID_ARGUMENT: ExitCode.INVALID,
    grpc.StatusCode.OUT_OF_RANGE: ExitCode.INVALID,
    grpc.StatusCode.NOT_FOUND: ExitCode.NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS: ExitCode.CONFLICT,
    grpc.StatusCode.ABORTED: ExitCode.CONFLICT,
    grpc.StatusCode.FAILED_PRECONDITION: ExitCode.PRECONDITION,
    grpc.StatusCode.UNAUTHENTICATED: ExitCode.AUTH,
    grpc.StatusCode.PERMISSION_DENIED: ExitCode.AUTH,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ExitCode.QUOTA,
    grpc.StatusCode.UNAVAILABLE: ExitCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED: ExitCode.UNAVAILABLE,
    grpc.StatusCode.CANCELLED: ExitCode.UNAVAILABLE,
}


def exit_code_for(status: grpc.StatusCode) -> ExitCode:
    return _BY_STATUS.get(status, ExitCode.ERROR)


@dataclass
class Failure(Exception):
    """What went wrong, as the server's status details tell it (or a local check)."""

    exit_code: ExitCode
    code: str  # the gRPC status code's name, e.g. INVALID_ARGUMENT
    message: str
    reason: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)
    quotas: list[QuotaViolation] = field(default_factory=list)
    # What the command adds for people, on a line of its own (the filter it sent).
    hint: str = ""

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    @classmethod
    def local(
        cls, exit_code: ExitCode, code: str, message: str, violations: Sequence[Violation] = ()
    ) -> Failure:
        return cls(exit_code, code, message, violations=list(violations))

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError) -> Failure:
        """The failure the status details tell (``duetime_client.status``)."""
        return cls.from_details(ErrorDetails.from_rpc_error(error))

    @classmethod
    def from_details(cls, found: ErrorDetails) -> Failure:
        return cls(
            exit_code_for(getattr(grpc.StatusCode, found.code)),
            found.code,
            found.message,
            found.reason,
            found.metadata,
            found.violations,
            found.quotas,
        )

    def as_dict(self) -> dict[str, Any]:
        """The failure for scripts (``-o json|yaml``), in proto3 JSON's camelCase."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.reason:
            out["reason"] = self.reason
        if self.metadata:
            out["metadata"] = self.metadata
        if self.violations:
            out["fieldViolations"] = [
                {"field": v.field, "description": v.description} for v in self.violations
            ]
        if self.quotas:
            out["quotaViolations"] = [
                {"quota": q.quota, "limit": q.limit, "usage": q.usage, "description": q.description}
                for q in self.quotas
            ]
        return {"error": out}

    def human_lines(self) -> list[str]:
        """The failure for people: the code and reason, then one line per bad field, or the
        message and one line per quota exceeded; then the hint."""
        head = ErrorDetails(self.code, self.message, self.reason).head
        hint = [f"  ({self.hint})"] if self.hint else []
        if self.violations:
            return [head] + [f"  {v.field}: {v.description}" for v in self.violations] + hint
        return [f"{head}: {self.message}"] + [q.human() for q in self.quotas] + hint
