"""`duetime-ops admin`: teams, tokens and quotas on the database host, with the same store code
AdminService uses (duetime_infra.admin). Its first use is making the first operator token
(`create-operator-token`), after which AdminService does the rest remotely.

Tokens are shown once, when created; only their SHA-256 digests are stored.
"""

from __future__ import annotations

import argparse
import asyncio

from duetime_core.jobspec import Priority
from duetime_core.teams import QUOTA_FIELDS, quota_value_problem
from duetime_core.text import text_problem
from duetime_infra.admin import (
    create_operator_token,
    create_team,
    create_worker_token,
    revoke_token,
)
from duetime_infra.codec.worker_codec import MAX_ID_LENGTH
from duetime_infra.config import env_dsn
from duetime_infra.pg.pool import Conn, connect
from duetime_infra.pg.teams import store as team_store
from duetime_infra.tls import postgres_tls_from_env


def register(areas: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = areas.add_parser("admin", help="teams, tokens and quotas")
    parser.add_argument("--dsn", default=None, help="PostgreSQL DSN (default: $DUETIME_PG_DSN)")
    parser.set_defaults(run=_run)
    sub = parser.add_subparsers(dest="command", required=True)
    team = sub.add_parser("create-team", help="create a team (if missing) and print a new token")
    team.add_argument("team")
    team.add_argument("--notification-url", default="")
    worker = sub.add_parser("create-worker-token", help="print a new worker token")
    worker.add_argument(
        "--worker-id-prefix",
        default="",
        help="the worker ids the token may act for begin with this (default: any)",
    )
    operator = sub.add_parser("create-operator-token", help="print a new operator token")
    operator.add_argument("--description", default="")
    revoke = sub.add_parser("revoke-token", help="revoke a token")
    revoke.add_argument("token")
    quota = sub.add_parser(
        "set-quota", help="set a team's limits: NAME=VALUE ... (VALUE 'default' resets one)"
    )
    quota.add_argument("team")
    quota.add_argument("limit", nargs="+")


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


async def _command(conn: Conn, args: argparse.Namespace) -> str:
    """What the command prints."""
    if args.command == "create-team":
        return await create_team(conn, args.team, args.notification_url)
    if args.command == "create-worker-token":
        problem = text_problem(args.worker_id_prefix, MAX_ID_LENGTH)
        if problem is not None:
            raise SystemExit(f"--worker-id-prefix: {problem}")
        return await create_worker_token(conn, worker_id_prefix=args.worker_id_prefix)
    if args.command == "create-operator-token":
        return await create_operator_token(conn, args.description)
    if args.command == "revoke-token":
        return "revoked" if await revoke_token(conn, args.token) else "no such token"
    team = await team_store.update_team_quota(conn, args.team, _quota_change(args.limit))
    return " ".join(f"{k}={getattr(team.quota, k)}" for k in QUOTA_FIELDS)


async def _admin(args: argparse.Namespace) -> None:
    conn = await connect(args.dsn or env_dsn(), postgres_tls_from_env())
    try:
        print(await _command(conn, args))
    finally:
        await conn.close()


def _run(args: argparse.Namespace) -> None:
    asyncio.run(_admin(args))
