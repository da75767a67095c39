"""PublicKeyService over gRPC, open to anyone: a team's JWKS, for targets to verify the ID
tokens of its signed calls (duetime_infra.signing)."""

from __future__ import annotations

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


class PublicKeyServicer(public_key_service_pb2_grpc.PublicKeyServiceServicer):
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def GetJwks(self, request: pb.GetJwksRequest, context: Context) -> pb.GetJwksResponse:
        """The team's published keys; an unknown team has none (no hint that a team exists)."""
        team_id = parse_team_name(request.name)
        keys = await published_keys(self._pool, team_id)
        return pb.GetJwksResponse(
            keys=[pb.Jwk(**{k: jwk[k] for k in _JWK_FIELDS}) for _, jwk in keys]
        )
