"""asyncpg pools with the codecs and session settings Duetime relies on."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeAlias

import asyncpg
from asyncpg.pool import PoolConnectionProxy

# Server-side TCP keepalives: the server notices a vanished client within about 11 s and ends
# its session, releasing whatever it held.
TCP_KEEPALIVES = {
    "tcp_keepalives_idle": "5",
    "tcp_keepalives_interval": "2",
    "tcp_keepalives_count": "3",
}

# What queries run on: a plain connection or one borrowed from a pool.
Conn: TypeAlias = "asyncpg.Connection[asyncpg.Record] | PoolConnectionProxy[asyncpg.Record]"


async def _init_connection(conn: Conn) -> None:
    for typ in ("json", "jsonb"):
        await conn.set_type_codec(typ, encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def create_pool(
    dsn: str,
    *,
    min_size: int = 1,
    max_size: int = 10,
    server_settings: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> asyncpg.Pool[asyncpg.Record]:
    settings = {"application_name": "duetime", "timezone": "UTC", **(server_settings or {})}
    pool = await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        init=_init_connection,
        server_settings=settings,
        **kwargs,
    )
    assert pool is not None
    return pool
