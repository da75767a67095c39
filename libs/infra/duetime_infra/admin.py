"""`python -m duetime_infra.admin`: operator commands on the database host, for teams, tokens
and quotas — the same store code AdminService uses. Its first use is making the first
operator token (`create-operator-token`), after which AdminService does the rest remotely.

Tokens are shown once, when created; only their SHA-256 digests are stored.
"""

from __future__ import annotations

import argparse
import asyncio

from duetime_core.identity import Role
from duetime_core.jobspec import Priority
from duetime_core.teams import QUOTA_FIELDS, quota_value_problem
from duetime_infra.config import env_dsn
from duetime_infra.pg.pool import Conn, connect
from duetime_infra.pg.teams import store as team_store
from duetime_infra.tls import postgres_tls_from_env


async def create_team(
    conn: Conn, team_id: str, notification_url: str = "", token: str | None = None
) -> str:
    """Creates the team if missing (its notification URL set either way) and a new token for
    it; returns the token."""
    async with conn.transaction():
        await team_store.ensure_team(conn, team_id, notification_url)
        _, secret = await team_store.create_token(conn, Role.TEAM, team_id, secret=token)
    return secret


async def create_worker_token(conn: Conn, token: str | None = None) -> str:
    _, secret = await team_store.create_token(conn, Role.WORKER, secret=token)
    return secret


async def create_operator_token(conn: Conn, description: str = "") -> str:
    _, secret = await team_store.create_token(conn, Role.OPERATOR, description=description)
    return secret


async def revoke_token(conn: Conn, token: str) -> bool:
    return await team_store.revoke_secret(conn, token)


def _quota_change(pairs: list[str]) -> dict[str, object | None]:
    """``name=value`` pairs (``value`` "default" resets) as a quota change."""
    change: dict[str, object | None] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or name not in QUOTA_FIELDS:
            raise SystemExit(f"expected NAME=VALUE with NAME one of {', '.join(QUOTA_FIELDS)}")
        if value == "default":
            change[name] = None
        elif name == "max_priority":
            change[name] = Priority(value.upper()).value
        else:
            number = int(value)
            problem = quota_value_problem(name, number)
            if problem:
                raise SystemExit(f"{name}: {problem}")
            change[name] = number
    return change


async def _run(args: argparse.Namespace) -> None:
    conn = await connect(args.dsn or env_dsn(), postgres_tls_from_env())
    try:
        if args.command == "create-team":
            print(await create_team(conn, args.team, args.notification_url))
        elif args.command == "create-worker-token":
            print(await create_worker_token(conn))
        elif args.command == "create-operator-token":
            print(await create_operator_token(conn, args.description))
        elif args.command == "revoke-token":
            print("revoked" if await revoke_token(conn, args.token) else "no such token")
        elif args.command == "set-quota":
            team = await team_store.update_team_quota(conn, args.team, _quota_change(args.limit))
            print(" ".join(f"{k}={getattr(team.quota, k)}" for k in QUOTA_FIELDS))
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
    operator = sub.add_parser("create-operator-token", help="print a new operator token")
    operator.add_argument("--description", default="")
    revoke = sub.add_parser("revoke-token", help="revoke a token")
    revoke.add_argument("token")
    quota = sub.add_parser(
        "set-quota", help="set a team's limits: NAME=VALUE ... (VALUE 'default' resets one)"
    )
    quota.add_argument("team")
    quota.add_argument("limit", nargs="+")
    asyncio.run(_run(parser.parse_args()))


if __name__ == "__main__":
    main()
