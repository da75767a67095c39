"""Teams and tokens made on the database host, with the store code AdminService uses: what
`duetime-ops admin` runs (the first operator token among them), and what the tests and
benches set up systems with. A token's secret is returned once; only its SHA-256 digest is
stored."""

from __future__ import annotations

from duetime_core.identity import Role
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.teams import store as team_store


async def create_team(
    conn: Conn, team_id: str, notification_url: str = "", token: str | None = None
) -> str:
    """Creates the team if missing (its notification URL set either way) and a new token for
    it; returns the token."""
    async with conn.transaction():
        await team_store.ensure_team(conn, team_id, notification_url)
        _, secret = await team_store.create_token(conn, Role.TEAM, team_id, secret=token)
    return secret


async def create_worker_token(
    conn: Conn, token: str | None = None, *, worker_id_prefix: str = ""
) -> str:
    """A new worker token, bound to the worker ids beginning with ``worker_id_prefix``."""
    _, secret = await team_store.create_token(
        conn, Role.WORKER, secret=token, worker_id_prefix=worker_id_prefix
    )
    return secret


async def create_operator_token(conn: Conn, description: str = "") -> str:
    _, secret = await team_store.create_token(conn, Role.OPERATOR, description=description)
    return secret


async def revoke_token(conn: Conn, token: str) -> bool:
    return await team_store.revoke_secret(conn, token)
