"""AdminService over gRPC (operator tokens only): convert the request, call the team store,
convert the answer."""

from __future__ import annotations

import logging
import re
import uuid
from typing import Any, TypeAlias

import asyncpg
from grpc import aio

from duetime.admin.v1 import admin_service_pb2 as pb
from duetime.admin.v1 import admin_service_pb2_grpc
from duetime_api.names import parse_team_name
from duetime_api.pagination import make_key_token, make_token, read_key_page, read_page
from duetime_api.public_key_servicer import JwksCache
from duetime_core.errors import InvalidArgument
from duetime_core.identity import Role
from duetime_core.jobspec import CallSigning
from duetime_core.teams import MAX_DESCRIPTION, SIGNING_KEY_ID, team_id_problem
from duetime_core.text import text_problem
from duetime_infra.codec.quota_codec import (
    ROLES,
    encode_quota,
    encode_signing_key,
    encode_team,
    encode_token,
    read_defaults,
    read_overrides,
)
from duetime_infra.codec.target_codec import read_signing
from duetime_infra.codec.violations import Violations
from duetime_infra.codec.worker_codec import MAX_ID_LENGTH
from duetime_infra.pg.teams import signing_keys
from duetime_infra.pg.teams import store as team_store
from duetime_infra.secrets.sealing import SecretBox

Context = aio.ServicerContext[Any, Any]
Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"

_TOKEN = re.compile(r"^tokens/([^/]+)$")
_TEAM_FIELDS = ("display_name", "notification_url", "default_call_signing")
MAX_URL = 2048


log = logging.getLogger(__name__)


def _check_url(v: Violations, field: str, url: str) -> None:
    if url and (
        len(url) > MAX_URL
        or not re.match(r"^https?://[^\s/]+", url)
        or any(c.isspace() or not c.isprintable() for c in url)
    ):
        v.add(
            field,
            f"an http(s) URL of at most {MAX_URL} characters without spaces or control "
            "characters, or empty",
        )


def _check_text(v: Violations, field: str, text: str) -> None:
    problem = text_problem(text, MAX_DESCRIPTION)
    if problem is not None:
        v.add(field, problem)


_SIGNING_KEY = re.compile(r"^teams/([^/]+)/signingKeys/([^/]+)$")


class AdminServicer(admin_service_pb2_grpc.AdminServiceServicer):
    def __init__(self, pool: Pool, secrets: SecretBox, jwks: JwksCache) -> None:
        self._pool = pool
        self._secrets = secrets
        self._jwks = jwks  # forgets a team whose keys change here

    async def CreateTeam(
        self, request: pb.CreateTeamRequest, context: Context
    ) -> pb.CreateTeamResponse:
        team = request.team
        v = Violations()
        problem = team_id_problem(team.team_id)
        if problem:
            v.add("team.team_id", problem)
        _check_text(v, "team.display_name", team.display_name)
        _check_url(v, "team.notification_url", team.notification_url)
        signing = read_signing(v, "team.default_call_signing", team.default_call_signing)
        v.raise_if_any()
        if signing not in (None, CallSigning.OFF):
            raise signing_keys.no_key(
                team.team_id, "team.default_call_signing", "a new team's default signs"
            )
        async with self._pool.acquire() as conn, conn.transaction():
            record = await team_store.create_team(
                conn,
                team.team_id,
                team.display_name,
                team.notification_url,
                signing or CallSigning.OFF,
            )
        return pb.CreateTeamResponse(team=encode_team(record))

    async def GetTeam(self, request: pb.GetTeamRequest, context: Context) -> pb.GetTeamResponse:
        record = await team_store.get_team(self._pool, parse_team_name(request.name))
        return pb.GetTeamResponse(team=encode_team(record))

    async def ListTeams(
        self, request: pb.ListTeamsRequest, context: Context
    ) -> pb.ListTeamsResponse:
        after, limit = read_key_page("teams", request.page_size, request.page_token)
        records = await team_store.list_teams(self._pool, after, limit)
        token = make_key_token("teams", records[-1].team_id) if len(records) == limit else ""
        return pb.ListTeamsResponse(teams=[encode_team(r) for r in records], next_page_token=token)

    async def UpdateTeam(
        self, request: pb.UpdateTeamRequest, context: Context
    ) -> pb.UpdateTeamResponse:
        team_id = parse_team_name(request.team.name, "team.name")
        paths = list(request.update_mask.paths)
        v = Violations()
        if not paths or any(p not in _TEAM_FIELDS for p in paths):
            v.add("update_mask", f"required, among {', '.join(_TEAM_FIELDS)}")
        if "display_name" in paths:
            _check_text(v, "team.display_name", request.team.display_name)
        if "notification_url" in paths:
            _check_url(v, "team.notification_url", request.team.notification_url)
        signing = None
        if "default_call_signing" in paths:
            raw = request.team.default_call_signing
            signing = read_signing(v, "team.default_call_signing", raw) or CallSigning.OFF
        v.raise_if_any()
        async with self._pool.acquire() as conn, conn.transaction():
            if signing not in (None, CallSigning.OFF):
                await signing_keys.require_key(
                    conn,
                    team_id,
                    "team.default_call_signing",
                    "the default signs",
                    exclusive=True,
                )
            record = await team_store.update_team(
                conn,
                team_id,
                display_name=request.team.display_name if "display_name" in paths else None,
                notification_url=request.team.notification_url
                if "notification_url" in paths
                else None,
                default_call_signing=signing,
            )
        return pb.UpdateTeamResponse(team=encode_team(record))

    async def UpdateTeamQuota(
        self, request: pb.UpdateTeamQuotaRequest, context: Context
    ) -> pb.UpdateTeamQuotaResponse:
        team_id = parse_team_name(request.name)
        v = Violations()
        change = read_overrides(request.quota, list(request.update_mask.paths), v)
        v.raise_if_any()
        async with self._pool.acquire() as conn, conn.transaction():
            record = await team_store.update_team_quota(conn, team_id, change)
        return pb.UpdateTeamQuotaResponse(team=encode_team(record))

    async def GetQuotaDefaults(
        self, request: pb.GetQuotaDefaultsRequest, context: Context
    ) -> pb.GetQuotaDefaultsResponse:
        return pb.GetQuotaDefaultsResponse(
            quota=encode_quota(await team_store.quota_defaults(self._pool))
        )

    async def UpdateQuotaDefaults(
        self, request: pb.UpdateQuotaDefaultsRequest, context: Context
    ) -> pb.UpdateQuotaDefaultsResponse:
        v = Violations()
        change = read_defaults(request.quota, list(request.update_mask.paths), v)
        v.raise_if_any()
        async with self._pool.acquire() as conn, conn.transaction():
            quota = await team_store.update_quota_defaults(conn, change)
        return pb.UpdateQuotaDefaultsResponse(quota=encode_quota(quota))

    async def CreateToken(
        self, request: pb.CreateTokenRequest, context: Context
    ) -> pb.CreateTokenResponse:
        token = request.token
        v = Violations()
        role = ROLES.get(token.role)
        if role is None:
            v.add(
                "token.role", "required: TOKEN_ROLE_TEAM, TOKEN_ROLE_WORKER or TOKEN_ROLE_OPERATOR"
            )
        if role is Role.TEAM and team_id_problem(token.team_id) is not None:
            v.add("token.team_id", "required for a team token: the team's id")
        if role is not None and role is not Role.TEAM and token.team_id:
            v.add("token.team_id", "only a team token acts for a team")
        _check_text(v, "token.description", token.description)
        if token.worker_id_prefix and role is not Role.WORKER:
            v.add("token.worker_id_prefix", "only a worker token is bound to worker ids")
        problem = text_problem(token.worker_id_prefix, MAX_ID_LENGTH)
        if problem is not None:
            v.add("token.worker_id_prefix", problem)
        v.raise_if_any()
        assert role is not None
        async with self._pool.acquire() as conn, conn.transaction():
            record, secret = await team_store.create_token(
                conn,
                role,
                token.team_id or None,
                token.description,
                worker_id_prefix=token.worker_id_prefix,
            )
        return pb.CreateTokenResponse(token=encode_token(record), secret=secret)

    async def ListTokens(
        self, request: pb.ListTokensRequest, context: Context
    ) -> pb.ListTokensResponse:
        if request.team_id and team_id_problem(request.team_id) is not None:
            raise InvalidArgument.field("team_id", "not a team id")
        scope = f"tokens/{request.team_id}/{request.include_revoked}"
        page = read_page(scope, request.page_size, request.page_token)
        after = None
        if page.after_time is not None and page.after_id is not None:
            after = (page.after_time, page.after_id)
        records = await team_store.list_tokens(
            self._pool, request.team_id or None, request.include_revoked, after, page.limit
        )
        next_token = ""
        if len(records) == page.limit:
            next_token = make_token(scope, records[-1].create_time, records[-1].token_id)
        return pb.ListTokensResponse(
            tokens=[encode_token(r) for r in records], next_page_token=next_token
        )

    async def RevokeToken(
        self, request: pb.RevokeTokenRequest, context: Context
    ) -> pb.RevokeTokenResponse:
        match = _TOKEN.match(request.name)
        try:
            token_id = uuid.UUID(match[1]) if match else None
        except ValueError:
            token_id = None
        if token_id is None:
            raise InvalidArgument.field("name", "must be tokens/{token_id}, a UUID")
        async with self._pool.acquire() as conn, conn.transaction():
            record = await team_store.revoke_token(conn, token_id)
        return pb.RevokeTokenResponse(token=encode_token(record))

    async def AddSigningKey(
        self, request: pb.AddSigningKeyRequest, context: Context
    ) -> pb.AddSigningKeyResponse:
        team_id = parse_team_name(request.parent, "parent")
        async with self._pool.acquire() as conn:
            record, key = await signing_keys.add_signing_key(conn, self._secrets, team_id)
        self._jwks.forget(team_id)
        return pb.AddSigningKeyResponse(
            signing_key=encode_signing_key(record), webhook_secret=key.secret_text
        )

    async def ListSigningKeys(
        self, request: pb.ListSigningKeysRequest, context: Context
    ) -> pb.ListSigningKeysResponse:
        team_id = parse_team_name(request.parent, "parent")
        await team_store.get_team(self._pool, team_id)  # NOT_FOUND for an unknown team
        keys = await signing_keys.published_keys(self._pool, team_id)
        return pb.ListSigningKeysResponse(
            signing_keys=[encode_signing_key(record) for record, _ in keys]
        )

    async def RetireSigningKey(
        self, request: pb.RetireSigningKeyRequest, context: Context
    ) -> pb.RetireSigningKeyResponse:
        team_id, key_id = _signing_key_name(request.name)
        async with self._pool.acquire() as conn:
            record = await signing_keys.retire_signing_key(conn, team_id, key_id)
        self._jwks.forget(team_id)
        return pb.RetireSigningKeyResponse(signing_key=encode_signing_key(record))

    async def RevokeSigningKey(
        self, request: pb.RevokeSigningKeyRequest, context: Context
    ) -> pb.RevokeSigningKeyResponse:
        team_id, key_id = _signing_key_name(request.name)
        async with self._pool.acquire() as conn:
            record = await signing_keys.revoke_signing_key(conn, team_id, key_id)
        self._jwks.forget(team_id)
        log.warning(
            "signing key revoked",
            extra={"action": "signing_key_revoked", "team": team_id, "key_id": key_id},
        )
        return pb.RevokeSigningKeyResponse(signing_key=encode_signing_key(record))


def _signing_key_name(name: str) -> tuple[str, str]:
    """The team and key ids of ``teams/{team_id}/signingKeys/{key_id}``."""
    match = _SIGNING_KEY.match(name)
    if match is None or team_id_problem(match[1]) is not None:
        raise InvalidArgument.field("name", "must be teams/{team_id}/signingKeys/{key_id}")
    if not SIGNING_KEY_ID.match(match[2]):
        raise InvalidArgument.field("name", "a key id is 1 to 32 lower-case letters and digits")
    return match[1], match[2]
