"""An error status as the API sends it, read into fields: the code and message, and the
google.rpc details Duetime attaches (AIP-193): ``ErrorInfo`` (a reason such as
``ETAG_MISMATCH`` and its metadata), ``BadRequest`` (each bad field and why) and
``QuotaFailure`` (the quota hit, its limit and the usage); from a failed call, or from a
``google.rpc.Status`` as a batch reports each item's outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import grpc
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status


@dataclass(frozen=True)
class Violation:
    field: str
    description: str


@dataclass(frozen=True)
class QuotaViolation:
    """A quota the request would exceed: its name as in the contract (``max_stored_jobs``),
    its limit and the usage now (the server's ``quota_dimensions``)."""

    quota: str
    limit: str
    usage: str
    description: str

    @classmethod
    def decode(cls, violation: error_details_pb2.QuotaFailure.Violation) -> QuotaViolation:
        dimensions = violation.quota_dimensions
        limit = dimensions.get("limit") or str(violation.quota_value)
        quota = violation.quota_id or violation.subject.removeprefix("quota:")
        return cls(quota, limit, dimensions.get("usage", ""), violation.description)

    def human(self) -> str:
        usage = f", usage {self.usage}" if self.usage else ""
        return f"  quota {self.quota}: limit {self.limit}{usage}"


@dataclass
class ErrorDetails:
    """What a failed call's status says: its code's name (``INVALID_ARGUMENT``), message and
    the details decoded."""

    code: str
    message: str
    reason: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)
    quotas: list[QuotaViolation] = field(default_factory=list)

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError) -> ErrorDetails:
        """Decodes ``google.rpc.ErrorInfo``, ``BadRequest`` and ``QuotaFailure`` from the status
        details of a sync or asyncio call's error."""
        call: Any = error
        status_code: grpc.StatusCode = call.code()
        found = cls(status_code.name, call.details() or "")
        status = rpc_status.from_call(call)
        if status is not None:
            found._decode(status)
        return found

    @classmethod
    def from_status(cls, status: status_pb2.Status) -> ErrorDetails:
        """The same from a ``google.rpc.Status`` itself: a batch item's outcome."""
        found = cls(code_pb2.Code.Name(status.code), status.message)
        found._decode(status)
        return found

    def _decode(self, status: status_pb2.Status) -> None:
        for detail in status.details:
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                self.reason, self.metadata = info.reason, dict(info.metadata)
            elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                self.violations += [Violation(v.field, v.description) for v in bad.field_violations]
            elif detail.Is(error_details_pb2.QuotaFailure.DESCRIPTOR):
                quota = error_details_pb2.QuotaFailure()
                detail.Unpack(quota)
                self.quotas += [QuotaViolation.decode(v) for v in quota.violations]

    @property
    def head(self) -> str:
        """The code, and the reason when it says more: ``ABORTED (ETAG_MISMATCH)``."""
        if not self.reason or self.reason == self.code:
            return self.code
        return f"{self.code} ({self.reason})"
