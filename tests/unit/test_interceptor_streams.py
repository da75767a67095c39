"""The interceptor around a bidirectional stream: a stream the client left is closed by the
event loop's async-generator finaliser, in a context other than the handler's; closing it
there must not count as a handler failure (the conftest fixture fails a test that logs one)."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import grpc

from duetime_core.identity import Principal, Role
from duetime_infra.grpc.auth import current_principal
from duetime_infra.grpc.interceptors import DuetimeInterceptor

SERVICE = "duetime.worker.v1.WorkerService"
WORKER = Principal(Role.WORKER, None)


class Tokens:
    async def resolve(self, token: str) -> Principal:
        assert token == "t"
        return WORKER


class Context:
    def __init__(self) -> None:
        self.aborted: list[object] = []

    async def abort_with_status(self, status: object) -> None:
        self.aborted.append(status)


async def test_a_stream_closed_from_another_context_ends_cleanly() -> None:
    seen: list[Principal] = []

    async def beats(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[str]:
        seen.append(current_principal())
        yield "first"
        yield "never read"

    async def continuation(details: Any) -> grpc.RpcMethodHandler[Any, Any]:
        return grpc.stream_stream_rpc_method_handler(beats)

    interceptor = DuetimeInterceptor(Tokens(), {SERVICE: Role.WORKER})  # type: ignore[arg-type]
    details = SimpleNamespace(
        method=f"/{SERVICE}/Heartbeat", invocation_metadata=(("authorization", "Bearer t"),)
    )
    handler: Any = await interceptor.intercept_service(continuation, details)
    context = Context()
    stream = handler.stream_stream(None, context)
    assert await stream.__anext__() == "first"
    assert seen == [WORKER]
    await asyncio.create_task(stream.aclose(), context=contextvars.Context())
    assert context.aborted == []
