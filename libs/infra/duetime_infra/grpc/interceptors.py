"""A server interceptor: authentication for every Duetime call and one error boundary.

A caller is authenticated by its bearer token, or, on a server that requires client
certificates (the scheduler given a worker CA), by its verified certificate: such a caller has
``certificate_role`` and needs no token.

Servicer methods raise domain errors; this turns them into rich statuses, and turns anything
unexpected into a logged INTERNAL without leaking a traceback to the caller.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from typing import Any

import grpc
from grpc import aio

from duetime_core.errors import DuetimeError, PermissionDenied
from duetime_infra.grpc.auth import (
    Principal,
    Role,
    TokenCache,
    bearer_token,
    reset_principal,
    set_principal,
)
from duetime_infra.grpc.status import internal_status, to_grpc_status

log = logging.getLogger(__name__)

# Reflection and health stay open so grpcurl and load balancers can use them without a token.
_OPEN_PREFIXES = ("/grpc.reflection.", "/grpc.health.")


async def _abort(context: aio.ServicerContext[Any, Any], error: BaseException, method: str) -> None:
    if isinstance(error, DuetimeError):
        await context.abort_with_status(to_grpc_status(error))
    if _server_stopped(error):
        return  # no caller is left to answer, and nothing went wrong in the handler
    log.exception("unexpected error in %s", method, exc_info=error, extra={"action": "rpc_failed"})
    await context.abort_with_status(internal_status())


def _server_stopped(error: BaseException) -> bool:
    """grpc's error for a stream that reads its next request once its server has stopped (a
    worker's heartbeat stream at a scheduler's shutdown). Its class is private to grpc."""
    return isinstance(error, aio.BaseError) and type(error).__name__ == "_ServerStoppedError"


class DuetimeInterceptor(aio.ServerInterceptor):
    """Authenticates calls to the services in ``roles`` and maps errors for all of them."""

    def __init__(
        self,
        tokens: TokenCache,
        roles: Mapping[str, Role],
        certificate_role: Role | None = None,
        open_services: Collection[str] = (),
    ) -> None:
        self._tokens = tokens
        # Served to anyone, without a token (what a target needs to verify a signed call).
        self._open = frozenset(open_services)
        # Fully qualified service name -> the role its callers must have.
        self._roles = dict(roles)
        # Only for a server whose TLS layer requires and verifies client certificates.
        self._certificate_role = certificate_role

    async def _principal(self, metadata: Any, context: aio.ServicerContext[Any, Any]) -> Principal:
        if self._certificate_role is not None and "x509_pem_cert" in context.auth_context():
            return Principal(self._certificate_role, None)
        return await self._tokens.resolve(bearer_token(metadata))

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        # The handler's behaviours are grpc.aio coroutines, which the sync-typed stubs miss.
        original = await continuation(handler_call_details)
        handler: Any = original
        method: str = handler_call_details.method
        if handler is None or method.startswith(_OPEN_PREFIXES):
            return original
        service = method.lstrip("/").split("/", 1)[0]
        role = self._roles.get(service)
        metadata = handler_call_details.invocation_metadata

        async def enter(context: aio.ServicerContext[Any, Any]) -> Any:
            if service in self._open:
                return None
            principal = await self._principal(metadata, context)
            if role is not None and principal.role is not role:
                raise PermissionDenied(
                    f"this token may not call {service}", reason="WRONG_TOKEN_ROLE"
                )
            return set_principal(principal)

        if handler.unary_unary is not None:
            inner_uu = handler.unary_unary

            async def unary_unary(request: Any, context: aio.ServicerContext[Any, Any]) -> Any:
                try:
                    token = await enter(context)
                    try:
                        return await inner_uu(request, context)
                    finally:
                        if token is not None:
                            reset_principal(token)
                except aio.AbortError:
                    raise
                except Exception as error:
                    await _abort(context, error, method)

            return grpc.unary_unary_rpc_method_handler(
                unary_unary,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.stream_stream is not None:
            inner_ss = handler.stream_stream

            async def stream_stream(
                requests: AsyncIterator[Any], context: aio.ServicerContext[Any, Any]
            ) -> AsyncIterator[Any]:
                try:
                    token = await enter(context)
                    try:
                        async for response in inner_ss(requests, context):
                            yield response
                    finally:
                        # Closed by asyncio's async-generator finalizer (its client went
                        # away), this runs in another context, where the principal was never
                        # set: nothing to reset there.
                        if token is not None:
                            with contextlib.suppress(ValueError):
                                reset_principal(token)
                except aio.AbortError:
                    raise
                except Exception as error:
                    await _abort(context, error, method)

            return grpc.stream_stream_rpc_method_handler(
                stream_stream,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return original
