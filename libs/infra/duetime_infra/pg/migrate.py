"""Numbered SQL migrations, applied by one command under an advisory lock.

Services never migrate at start-up; they only check (``check_schema``) that the database is at
a version they support, so old and new versions can run side by side during a rolling deploy.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
from dataclasses import dataclass
from importlib import resources

import asyncpg

from duetime_core.errors import FailedPrecondition
from duetime_infra.pg.pool import Conn

log = logging.getLogger(__name__)

# An arbitrary constant shared by every migrating process: the advisory lock serialises them.
_MIGRATION_LOCK = 0x6475_6574_696D_65  # "duetime"
_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")

# The schema versions this code can run against: expand-then-contract migrations keep the
# previous version compatible, so a service accepts [MIN, MAX].
MIN_SUPPORTED_VERSION = 1
MAX_SUPPORTED_VERSION = 3


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def load_migrations() -> list[Migration]:
    found: list[Migration] = []
    for entry in resources.files("duetime_infra.pg.migrations").iterdir():
        match = _FILE.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migration numbers must run 1..n without gaps, found {versions}")
    return found


async def apply_migrations(conn: Conn) -> list[int]:
    """Applies every pending migration, each in its own transaction; returns those applied."""
    applied_now: list[int] = []
    await conn.execute("SELECT pg_advisory_lock($1)", _MIGRATION_LOCK)
    try:
        await conn.execute(
            """CREATE TABLE IF NOT EXISTS duetime_schema_migrations (
                   version integer PRIMARY KEY,
                   name text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        done = {
            r["version"] for r in await conn.fetch("SELECT version FROM duetime_schema_migrations")
        }
        for migration in load_migrations():
            if migration.version in done:
                continue
            async with conn.transaction():
                await conn.execute(migration.sql)
                await conn.execute(
                    "INSERT INTO duetime_schema_migrations (version, name) VALUES ($1, $2)",
                    migration.version,
                    migration.name,
                )
            log.info(
                "migration applied", extra={"action": "migrated", "version": migration.version}
            )
            applied_now.append(migration.version)
        async with conn.transaction():
            await conn.execute("SELECT duetime_maintain_partitions()")
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _MIGRATION_LOCK)
    return applied_now


async def schema_version(conn: Conn) -> int:
    exists = await conn.fetchval("SELECT to_regclass('duetime_schema_migrations') IS NOT NULL")
    if not exists:
        return 0
    version = await conn.fetchval("SELECT max(version) FROM duetime_schema_migrations")
    return int(version or 0)


async def check_schema(conn: Conn) -> int:
    """Refuses to serve against a schema this code does not support."""
    version = await schema_version(conn)
    if not MIN_SUPPORTED_VERSION <= version <= MAX_SUPPORTED_VERSION:
        raise FailedPrecondition(
            f"database schema version {version} is not supported by this build "
            f"(supports {MIN_SUPPORTED_VERSION}..{MAX_SUPPORTED_VERSION}); "
            "run `python -m duetime_infra.pg.migrate`",
            reason="SCHEMA_VERSION_UNSUPPORTED",
        )
    return version


async def _main(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        applied = await apply_migrations(conn)
        version = await schema_version(conn)
        print(f"schema at version {version}; applied now: {applied or 'none'}")
    finally:
        await conn.close()


def main() -> None:
    from duetime_infra.config import env_dsn

    parser = argparse.ArgumentParser(description="Apply Duetime's database migrations.")
    parser.add_argument("--dsn", default=None, help="PostgreSQL DSN (default: $DUETIME_PG_DSN)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    asyncio.run(_main(args.dsn or env_dsn()))


if __name__ == "__main__":
    main()
