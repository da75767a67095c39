"""Calling AdminService with the operator token (``duetime admin ...``)."""

from __future__ import annotations

from collections.abc import Callable

import grpc
from google.protobuf.message import Message

from duetime_cli.failures import Failure
from duetime_cli.session import Response, Session


def admin_call(session: Session, rpc: Callable[..., Response], request: Message) -> Response:
    """Calls AdminService with the operator token; a refusal of the team token it fell back
    to says where an operator token goes."""
    try:
        return session.call(rpc, request, operator=True)
    except grpc.RpcError as error:
        failure = Failure.from_rpc_error(error)
        if failure.code == "PERMISSION_DENIED" and not session.operator_token:
            failure.message += (
                " (no operator token was given, so the team token was sent: "
                "pass --operator-token or set DUETIME_OPERATOR_TOKEN)"
            )
        raise failure from None
