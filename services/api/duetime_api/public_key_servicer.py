"""PublicKeyService over gRPC, open to anyone: a team's JWKS, for targets to verify the ID
tokens of its signed calls (duetime_infra.signing)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeAlias

import asyncpg
from grpc import aio

from duetime.jobs.v1 import public_key_service_pb2 as pb
from duetime.jobs.v1 import public_key_service_pb2_grpc
from duetime_api.names import parse_team_name
from duetime_infra.pg.teams.signing_keys import published_keys

Context = aio.ServicerContext[Any, Any]
Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["PublicKeyService"].full_name
_JWK_FIELDS = ("kty", "crv", "x", "y", "kid", "use", "alg")
# How long a team's JWKS is kept, here and by HTTP caches (Cache-Control: max-age).
JWKS_KEEP_SECONDS = 30
# Teams whose JWKS is kept at most: anyone may ask for any name.
_MAX_KEPT = 10_000


class JwksCache:
    """Teams' JWKS kept ``keep`` seconds: the document is open to anyone, so a flood of fetches
    costs a query per team per ``keep`` at most. A key added or retired through this process
    is seen at once (``forget``); through another replica, within ``keep``, well inside the
    minutes a rotation waits between its steps (docs/clients.md)."""

    def __init__(
        self,
        pool: Pool,
        keep: float = JWKS_KEEP_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pool = pool
        self._keep = keep
        self._clock = clock
        self._kept: dict[str, tuple[float, pb.GetJwksResponse]] = {}

    async def jwks(self, team_id: str) -> pb.GetJwksResponse:
        now = self._clock()
        kept = self._kept.get(team_id)
        if kept is not None and kept[0] > now:
            return kept[1]
        keys = await published_keys(self._pool, team_id)
        answer = pb.GetJwksResponse(
            keys=[pb.Jwk(**{k: jwk[k] for k in _JWK_FIELDS}) for _, jwk in keys]
        )
        if len(self._kept) >= _MAX_KEPT:
            self._kept.clear()
        self._kept[team_id] = (now + self._keep, answer)
        return answer

    def forget(self, team_id: str) -> None:
        self._kept.pop(team_id, None)


class PublicKeyServicer(public_key_service_pb2_grpc.PublicKeyServiceServicer):
    def __init__(self, jwks: JwksCache) -> None:
        self._jwks = jwks

    async def GetJwks(self, request: pb.GetJwksRequest, context: Context) -> pb.GetJwksResponse:
        """The team's published keys; an unknown team has none (no hint that a team exists).
        HTTP callers may keep the answer as long as this process does (the gateway passes the
        cache-control metadata on as a header)."""
        team_id = parse_team_name(request.name)
        answer = await self._jwks.jwks(team_id)
        await context.send_initial_metadata(
            (("cache-control", f"public, max-age={JWKS_KEEP_SECONDS}"),)
        )
        return answer
