"""Fresh PostgreSQL databases per test, cloned from a migrated template (fast, independent)."""

from __future__ import annotations

import os
import uuid
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from duetime_infra.config import env_dsn
from duetime_infra.pg.migrate import apply_migrations


def admin_dsn() -> str:
    return env_dsn(os.environ)


def with_database(dsn: str, database: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path=f"/{database}"))


async def create_database(name: str, template: str | None = None) -> str:
    conn = await asyncpg.connect(admin_dsn())
    try:
        clause = f' TEMPLATE "{template}"' if template else ""
        await conn.execute(f'CREATE DATABASE "{name}"{clause}')
    finally:
        await conn.close()
    return with_database(admin_dsn(), name)


async def drop_database(name: str) -> None:
    conn = await asyncpg.connect(admin_dsn())
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


async def migrated_template() -> str:
    """A template database with every migration applied; its name."""
    name = f"duetime_tpl_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name)
    conn = await asyncpg.connect(dsn)
    try:
        await apply_migrations(conn)
    finally:
        await conn.close()
    return name
