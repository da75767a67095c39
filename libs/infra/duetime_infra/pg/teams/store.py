"""Teams, their quotas and their bearer tokens on PostgreSQL: what AdminService and the admin
command change, and the token lookup every service authenticates with.

Tokens are stored as SHA-256 digests only; the secret exists in the answer that made it.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import TypeAlias

import asyncpg

from duetime_core.errors import AlreadyExists, NotFound
from duetime_core.identity import Principal, Role, token_digest
from duetime_core.jobspec import CallSigning
from duetime_core.quotas import TeamQuota
from duetime_core.teams import QUOTA_FIELDS, TeamRecord, TokenRecord
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.sql import q
from duetime_infra.pg.teams.quotas import quota_from_row, state_from_row

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"
# A quota change: limit name -> new value, or None to go back to the default.
QuotaChange = Mapping[str, object | None]

TOKEN_PREFIXES = {Role.TEAM: "dtt", Role.WORKER: "dtw", Role.OPERATOR: "dto"}


def new_secret(role: Role) -> str:
    return f"{TOKEN_PREFIXES[role]}_{secrets.token_urlsafe(32)}"


def _team_not_found(team_id: str) -> NotFound:
    return NotFound(f"team {team_id!r} not found", reason="TEAM_NOT_FOUND")


def _team(row: asyncpg.Record) -> TeamRecord:
    own = {name: row[f"own_{name}"] for name in QUOTA_FIELDS if row[f"own_{name}"] is not None}
    return TeamRecord(
        team_id=row["team_id"],
        display_name=row["display_name"],
        notification_url=row["notification_url"],
        create_time=row["create_time"],
        quota=quota_from_row(row),
        overrides=own,
        usage=state_from_row(row),
        now=row["now"],
        default_call_signing=CallSigning(row["default_call_signing"]),
    )


def _token(row: asyncpg.Record) -> TokenRecord:
    return TokenRecord(
        token_id=row["token_id"],
        role=Role(row["role"]),
        team_id=row["team_id"],
        description=row["description"],
        create_time=row["create_time"],
        revoke_time=row["revoke_time"],
        worker_id_prefix=row["worker_id_prefix"],
    )


def _changes(change: QuotaChange) -> list[object]:
    """The (set?, value) argument pairs of the quota update statements, in QUOTA_FIELDS order."""
    args: list[object] = []
    for name in QUOTA_FIELDS:
        args.extend([name in change, change.get(name)])
    return args


async def principal_for(conn: Conn | Pool, digest: bytes) -> Principal | None:
    """Who a token (by its digest) stands for; None when unknown or revoked."""
    row = await conn.fetchrow(q("token_lookup"), digest)
    if row is None:
        return None
    return Principal(
        Role(row["role"]),
        row["team_id"],
        row["token_id"],
        row["description"],
        row["worker_id_prefix"],
    )


async def create_team(
    conn: Conn,
    team_id: str,
    display_name: str = "",
    notification_url: str = "",
    default_call_signing: CallSigning = CallSigning.OFF,
) -> TeamRecord:
    inserted = await conn.fetchval(
        q("team_insert"), team_id, display_name, notification_url, default_call_signing.value
    )
    if inserted is None:
        raise AlreadyExists(f"team {team_id!r} already exists", reason="TEAM_EXISTS")
    return await get_team(conn, team_id)


async def ensure_team(conn: Conn, team_id: str, notification_url: str = "") -> None:
    """Makes the team if missing; sets its notification URL either way."""
    await conn.execute(q("team_upsert"), team_id, notification_url)


async def get_team(conn: Conn | Pool, team_id: str) -> TeamRecord:
    rows = await conn.fetch(q("team_get"), [team_id])
    if not rows:
        raise _team_not_found(team_id)
    return _team(rows[0])


async def list_teams(conn: Conn | Pool, after: str | None, limit: int) -> list[TeamRecord]:
    ids = [r["team_id"] for r in await conn.fetch(q("team_list"), after, limit)]
    return [_team(r) for r in await conn.fetch(q("team_get"), ids)] if ids else []


async def update_team(
    conn: Conn,
    team_id: str,
    *,
    display_name: str | None,
    notification_url: str | None,
    default_call_signing: CallSigning | None = None,
) -> TeamRecord:
    """Sets the fields given (None: unchanged)."""
    updated = await conn.fetchval(
        q("team_update"),
        team_id,
        display_name is not None,
        display_name or "",
        notification_url is not None,
        notification_url or "",
        default_call_signing is not None,
        (default_call_signing or CallSigning.OFF).value,
    )
    if updated is None:
        raise _team_not_found(team_id)
    return await get_team(conn, team_id)


async def update_team_quota(conn: Conn, team_id: str, change: QuotaChange) -> TeamRecord:
    """Sets the team's limits in ``change`` (None: back to the default). Every service reads
    quotas when it decides, so the change applies from the next decision on."""
    if await conn.fetchval(q("team_quota_update"), team_id, *_changes(change)) is None:
        raise _team_not_found(team_id)
    return await get_team(conn, team_id)


async def quota_defaults(conn: Conn | Pool) -> TeamQuota:
    row = await conn.fetchrow(q("quota_defaults_get"))
    assert row is not None  # the migration inserts the one row
    return quota_from_row(row)


async def update_quota_defaults(conn: Conn, change: QuotaChange) -> TeamQuota:
    args = _changes(change)
    row = await conn.fetchrow(q("quota_defaults_update"), *args)
    assert row is not None
    return quota_from_row(row)


async def create_token(
    conn: Conn,
    role: Role,
    team_id: str | None = None,
    description: str = "",
    secret: str | None = None,
    worker_id_prefix: str = "",
) -> tuple[TokenRecord, str]:
    """A new token and its secret (``secret``, or a random one); a worker token may be bound
    to the worker ids beginning with ``worker_id_prefix``."""
    secret = secret or new_secret(role)
    try:
        row = await conn.fetchrow(
            q("token_insert"),
            token_digest(secret),
            role.value,
            team_id,
            description,
            worker_id_prefix,
        )
    except asyncpg.ForeignKeyViolationError:
        raise _team_not_found(team_id or "") from None
    assert row is not None
    return _token(row), secret


async def list_tokens(
    conn: Conn | Pool,
    team_id: str | None,
    include_revoked: bool,
    after: tuple[datetime, uuid.UUID] | None,
    limit: int,
) -> list[TokenRecord]:
    rows = await conn.fetch(
        q("token_list"),
        team_id,
        include_revoked,
        after[0] if after else None,
        after[1] if after else None,
        limit,
    )
    return [_token(r) for r in rows]


async def revoke_token(conn: Conn, token_id: uuid.UUID) -> TokenRecord:
    row = await conn.fetchrow(q("token_revoke"), token_id)
    if row is None:
        raise NotFound(f"token {token_id} not found", reason="TOKEN_NOT_FOUND")
    return _token(row)


async def revoke_secret(conn: Conn, secret: str) -> bool:
    """Revokes the token whose secret is ``secret``; False when there is none."""
    return await conn.fetchval(q("token_revoke_by_secret"), token_digest(secret)) is not None
