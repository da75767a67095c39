"""The one place domain errors become gRPC statuses (Google AIP-193).

Every deliberate error carries ``google.rpc.ErrorInfo`` (reason, domain ``duetime.dev``); bad
input also carries ``google.rpc.BadRequest`` with every field violation, and UNAVAILABLE a
``google.rpc.RetryInfo`` saying when to try again. Anything unexpected is logged with its
traceback and answered as a plain INTERNAL.
"""

from __future__ import annotations

import logging

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from duetime_core.errors import DuetimeError, InvalidArgument, Unavailable

log = logging.getLogger(__name__)

DOMAIN = "duetime.dev"


def to_rpc_status(error: DuetimeError) -> status_pb2.Status:
    details: list[any_pb2.Any] = []
    info = any_pb2.Any()
    info.Pack(
        error_details_pb2.ErrorInfo(reason=error.reason, domain=DOMAIN, metadata=error.metadata)
    )
    details.append(info)
    if isinstance(error, InvalidArgument) and error.violations:
        bad = error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(
                    field=v.field, description=v.description
                )
                for v in error.violations
            ]
        )
        packed = any_pb2.Any()
        packed.Pack(bad)
        details.append(packed)
    if error.quota_violations:
        packed = any_pb2.Any()
        packed.Pack(quota_failure(error))
        details.append(packed)
    if isinstance(error, Unavailable):
        delay = duration_pb2.Duration()
        delay.FromNanoseconds(round(error.retry_delay * 1e9))
        retry = any_pb2.Any()
        retry.Pack(error_details_pb2.RetryInfo(retry_delay=delay))
        details.append(retry)
    return status_pb2.Status(
        code=getattr(code_pb2, error.code.value), message=error.message, details=details
    )


def quota_failure(error: DuetimeError) -> error_details_pb2.QuotaFailure:
    """The quotas a request would exceed: each names the quota (``quota_id``), its limit (in
    the description and ``quota_dimensions``) and the usage now."""
    return error_details_pb2.QuotaFailure(
        violations=[
            error_details_pb2.QuotaFailure.Violation(
                subject=f"quota:{v.quota}",
                description=v.description,
                api_service=DOMAIN,
                quota_id=v.quota,
                quota_dimensions={"limit": v.limit, "usage": v.usage},
                quota_value=int(v.limit) if v.limit.isdigit() else 0,
            )
            for v in error.quota_violations
        ]
    )


def to_grpc_status(error: DuetimeError) -> grpc.Status:
    status: grpc.Status = rpc_status.to_status(to_rpc_status(error))
    return status


def internal_status() -> grpc.Status:
    status: grpc.Status = rpc_status.to_status(
        status_pb2.Status(code=code_pb2.INTERNAL, message="internal error")
    )
    return status
