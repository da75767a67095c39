"""The gateway (Envoy in front of the api, ``python -m duetime_gateway``) as a process, and a
client of its HTTP/JSON API that calls it as curl would: a method, a path, a JSON body and a
bearer token, over HTTPS verified with the services' CA."""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp

from testkit.processes import REPO, Service, service
from testkit.tls import service_client_tls

OPENAPI_FILE = REPO / "openapi" / "duetime.swagger.yaml"


@asynccontextmanager
async def running_gateway(
    api_address: str, settings: Mapping[str, str] = {}
) -> AsyncIterator[Service]:
    """The gateway on a free port of 127.0.0.1 in front of the api at ``api_address``, with the
    services' TLS settings (``settings`` over the environment's)."""
    env = {
        "DUETIME_API_TARGET": api_address,
        "DUETIME_GATEWAY_ADDRESS": "127.0.0.1:0",
        "DUETIME_GATEWAY_OPENAPI_FILE": str(OPENAPI_FILE),
        "DUETIME_GATEWAY_CONCURRENCY": "1",
        "DUETIME_SHUTDOWN_GRACE_SECONDS": "2",
        **settings,
    }
    async with service("duetime_gateway", env, "DUETIME_GATEWAY_PORT") as gateway:
        yield gateway


def gateway_tls(settings: Mapping[str, str] = {}) -> ssl.SSLContext | bool:
    """How a client verifies the gateway: the services' CA; False (no TLS) when gRPC is
    plaintext."""
    tls = service_client_tls(settings)
    return False if tls is None else ssl.create_default_context(cafile=tls.ca_file)


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any  # the JSON body; the text when it is not JSON
    headers: Mapping[str, str]

    @property
    def reason(self) -> str:
        """The ErrorInfo reason of an error body."""
        return next(
            (d["reason"] for d in self.body.get("details", []) if d["@type"].endswith("ErrorInfo")),
            "",
        )

    def detail(self, kind: str) -> dict[str, Any]:
        """The error body's detail of type ``google.rpc.<kind>``."""
        found = [
            d
            for d in self.body["details"]
            if d["@type"] == f"type.googleapis.com/google.rpc.{kind}"
        ]
        assert len(found) == 1, self.body
        detail: dict[str, Any] = found[0]
        return detail


class HttpApi:
    """The HTTP/JSON API through one gateway."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str, token: str) -> None:
        self.session = session
        self.base_url = base_url
        self.token = token

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Answer:
        """One request; ``token=""`` sends none."""
        headers = {}
        token = self.token if token is None else token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = None if body is None else json.dumps(body)
        async with self.session.request(
            method, self.base_url + path, data=data, headers=headers, params=params
        ) as response:
            text = await response.text()
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = text
            return Answer(response.status, parsed, dict(response.headers))

    async def ok(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        """A call that must answer 200; its JSON body."""
        answer = await self.call(method, path, body, **kwargs)
        assert answer.status == 200, (method, path, answer)
        return answer.body


@asynccontextmanager
async def http_api(
    gateway: Service, token: str, settings: Mapping[str, str] = {}
) -> AsyncIterator[HttpApi]:
    tls = gateway_tls(settings)
    scheme = "https" if tls else "http"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=tls)) as session:
        yield HttpApi(session, f"{scheme}://{gateway.address}", token)
