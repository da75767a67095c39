"""What every service does first: refuse to run against a schema it does not support."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import Any

import asyncpg

from duetime_core.errors import DuetimeError
from duetime_infra.config import ConfigError
from duetime_infra.pg.migrate import check_schema


async def require_schema(dsn: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return await check_schema(conn)
    finally:
        await conn.close()


def run_service(name: str, main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Runs a service's main coroutine; a refusal to start is one clear line and exit code 1."""
    try:
        asyncio.run(main())
    except (DuetimeError, ConfigError) as error:
        print(f"{name}: cannot start: {error}", file=sys.stderr)
        sys.exit(1)
