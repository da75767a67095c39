"""The error boundary around streaming calls (the workers' heartbeat stream): a stream closed
from another context than its own — asyncio's async-generator finalizer closes it so once its
client went away — or reading on after its server stopped ends quietly, not as an "unexpected
error"."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from grpc._cython import cygrpc  # type: ignore[attr-defined]

from duetime_infra.grpc.auth import Principal, Role, TokenCache, current_principal
from duetime_infra.grpc.interceptors import DuetimeInterceptor

SERVICE = "duetime.worker.v1.WorkerService"


@dataclass(frozen=True)
class CallDetails:
    method: str
    invocation_metadata: tuple[tuple[str, str], ...]


class Context:
    """What the interceptor uses of a grpc.aio ServicerContext."""

    def __init__(self) -> None:
        self.aborted: list[Any] = []

    def auth_context(self) -> dict[str, list[bytes]]:
        return {}

    async def abort_with_status(self, status: Any) -> None:
        self.aborted.append(status)
        raise grpc.aio.AbortError()


async def worker_token(digest: bytes) -> Principal | None:
    return Principal(Role.WORKER, None)


async def beats(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Role]:
    while True:
        yield current_principal().role


async def nothing() -> AsyncIterator[Any]:
    await asyncio.Event().wait()
    yield None


async def intercepted(behaviour: Any) -> Any:
    """The heartbeat method's handler with ``behaviour``, behind the interceptor."""
    handler: Any = grpc.stream_stream_rpc_method_handler(behaviour)

    async def continuation(details: Any) -> Any:
        return handler

    interceptor = DuetimeInterceptor(TokenCache(worker_token), {SERVICE: Role.WORKER})
    details = CallDetails(f"/{SERVICE}/Heartbeat", (("authorization", "Bearer t"),))
    return await interceptor.intercept_service(continuation, details)  # type: ignore[arg-type]


async def test_a_stream_closed_from_another_context_ends_without_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    wrapped = await intercepted(beats)
    context = Context()
    stream = wrapped.stream_stream(nothing(), context)
    assert await anext(stream) is Role.WORKER  # the principal is set for the call
    with caplog.at_level(logging.ERROR):
        await asyncio.create_task(stream.aclose(), context=contextvars.Context())
    assert context.aborted == []
    assert "unexpected error" not in caplog.text


async def stopped_server(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Role]:
    yield current_principal().role
    raise cygrpc._ServerStoppedError("Server already stopped.")


async def test_a_stream_reading_after_its_server_stopped_ends_without_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    wrapped = await intercepted(stopped_server)
    context = Context()
    with caplog.at_level(logging.ERROR):
        answers = [answer async for answer in wrapped.stream_stream(nothing(), context)]
    assert answers == [Role.WORKER]
    assert context.aborted == []
    assert "unexpected error" not in caplog.text
