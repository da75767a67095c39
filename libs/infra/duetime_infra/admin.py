"""`python -m duetime_infra.admin`: operator commands for teams and tokens.

Tokens are shown once, when created; only their SHA-256 digests are stored.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets

from duetime_infra.config import env_dsn
from duetime_infra.grpc.auth import token_digest
from duetime_infra.pg.pool import Conn, connect
from duetime_infra.tls import postgres_tls_from_env


def new_token(prefix: str) -> str:
    return f"{prefix}_{secrets.token_urlsafe(32)}"


async def create_team(
    conn: Conn, team_id: str, notification_url: str = "", token: str | None = None
) -> str:
    """Creates the team if missing and a new token for it; returns the token."""
    token = token or new_token("dtt")
    async with conn.transaction():
        await conn.execute(
            """INSERT INTO teams (team_id, notification_url) VALUES ($1, $2)
               ON CONFLICT (team_id) DO UPDATE SET notification_url = EXCLUDED.notification_url""",
            team_id,
            notification_url,
        )
        await conn.execute(
            "INSERT INTO api_tokens (token_sha256, role, team_id) VALUES ($1, 'team', $2)",
            token_digest(token),
            team_id,
        )
    return token


async def create_worker_token(conn: Conn, token: str | None = None) -> str:
    token = token or new_token("dtw")
    await conn.execute(
        "INSERT INTO api_tokens (token_sha256, role) VALUES ($1, 'worker')", token_digest(token)
    )
    return token


async def revoke_token(conn: Conn, token: str) -> bool:
    status: str = await conn.execute(
        "UPDATE api_tokens SET revoke_time = duetime_now() WHERE token_sha256 = $1",
        token_digest(token),
    )
    return status.endswith(" 1")


async def _run(args: argparse.Namespace) -> None:
    conn = await connect(args.dsn or env_dsn(), postgres_tls_from_env())
    try:
        if args.command == "create-team":
            print(await create_team(conn, args.team, args.notification_url))
        elif args.command == "create-worker-token":
            print(await create_worker_token(conn))
        elif args.command == "revoke-token":
            print("revoked" if await revoke_token(conn, args.token) else "no such token")
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description="Duetime operator commands")
    parser.add_argument("--dsn", default=None, help="PostgreSQL DSN (default: $DUETIME_PG_DSN)")
    sub = parser.add_subparsers(dest="command", required=True)
    team = sub.add_parser("create-team", help="create a team (if missing) and print a new token")
    team.add_argument("team")
    team.add_argument("--notification-url", default="")
    sub.add_parser("create-worker-token", help="print a new worker token")
    revoke = sub.add_parser("revoke-token", help="revoke a token")
    revoke.add_argument("token")
    asyncio.run(_run(parser.parse_args()))


if __name__ == "__main__":
    main()
