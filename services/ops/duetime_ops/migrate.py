"""`duetime-ops migrate`: applies the pending migrations under the advisory lock, one line for
each as it is applied, and a last line with the schema's version (duetime_infra.pg.migrate)."""

from __future__ import annotations

import argparse
import asyncio
import logging

from duetime_infra.config import env_dsn
from duetime_infra.pg.migrate import apply_migrations, schema_version
from duetime_infra.pg.pool import connect
from duetime_infra.tls import postgres_tls_from_env


def register(areas: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = areas.add_parser("migrate", help="apply Duetime's database migrations")
    command.add_argument("--dsn", default=None, help="PostgreSQL DSN (default: $DUETIME_PG_DSN)")
    command.set_defaults(run=_run)


def summary(version: int, applied: list[int]) -> str:
    """The command's last line: the schema's version and the migrations this run applied."""
    if not applied:
        return f"schema at version {version}; nothing to apply"
    first, last = applied[0], applied[-1]
    return f"schema at version {version}; applied {first:04d}" + (
        f"..{last:04d}" if last != first else ""
    )


async def _migrate(dsn: str) -> None:
    conn = await connect(dsn, postgres_tls_from_env())
    try:
        applied = await apply_migrations(conn)
        print(summary(await schema_version(conn), applied))
    finally:
        await conn.close()


def _run(args: argparse.Namespace) -> None:
    # One line a migration as it is applied ("migration 0004_team_quotas applied (0.2 s)").
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    asyncio.run(_migrate(args.dsn or env_dsn()))
