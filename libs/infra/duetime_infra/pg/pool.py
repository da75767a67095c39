"""asyncpg pools with the codecs and session settings Duetime relies on, optionally over TLS,
whose connection failures surface as ``DatabaseUnavailable``.

A database that is restarting, shutting down, refusing connections or gone mid-query is an
outage, not a bug: every such driver error raised while a pooled connection is acquired or used
(``pool.fetch``, ``async with pool.acquire()``, ...) is re-raised, where it leaves the pool, as
``DatabaseUnavailable``, which the gRPC error boundary answers as UNAVAILABLE with a retry
delay.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import asyncpg
from asyncpg import exceptions as pgerr
from asyncpg.pool import PoolAcquireContext, PoolConnectionProxy

from duetime_core.errors import Unavailable

# Server-side TCP keepalives: the server notices a vanished client within about 11 s and ends
# its session, releasing whatever it held.
TCP_KEEPALIVES = {
    "tcp_keepalives_idle": "5",
    "tcp_keepalives_interval": "2",
    "tcp_keepalives_count": "3",
}

# What queries run on: a plain connection or one borrowed from a pool.
Conn: TypeAlias = "asyncpg.Connection[asyncpg.Record] | PoolConnectionProxy[asyncpg.Record]"


async def generic_plans(conn: Conn) -> None:
    """For the rest of the transaction, prepared statements run their generic plan, made once
    a connection, which prunes partitions as it runs. The custom plans of statements on the
    runs cost as much to make as to run, or more: a batch's arrays are estimated element by
    element against each partition's statistics (`bench/herd --pg-sample`), and a statement
    that names runs by id alone prunes nothing as it is planned (the heartbeat's custom plan
    took 10 ms to make and 1 ms to run; pg_stat_statements with track_planning)."""
    await conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")


# Errors by which the server says it is going away or cannot take the session (not that a
# query is wrong).
_SERVER_GONE = (
    pgerr.PostgresConnectionError,
    pgerr.AdminShutdownError,
    pgerr.CrashShutdownError,
    pgerr.CannotConnectNowError,
    pgerr.TooManyConnectionsError,
)


class DatabaseUnavailable(Unavailable):
    """PostgreSQL cannot be reached now (restarting, down, out of connections)."""

    default_reason = "DATABASE_UNAVAILABLE"


class SchemaChanged(Unavailable):
    """A statement whose result a migration changed (a column added to its table): PostgreSQL
    refuses each statement a connection prepared before once ("cached plan must not change
    result type"), and asyncpg prepares it again, so a retry succeeds."""

    default_reason = "SCHEMA_CHANGED"


def _server_gone(error: BaseException) -> bool:
    # A pooled connection the server closed: asyncpg says so with an InterfaceError.
    closed = isinstance(error, pgerr.InterfaceError) and "connection is closed" in str(error)
    return closed or isinstance(error, _SERVER_GONE)


# How asyncpg fails a call on a connection the server has just closed (which of them depends on
# whether the closing was seen before the call): with the connection closed after it, an outage.
_ON_A_LOST_CONNECTION = (OSError, pgerr.InterfaceError, pgerr.InternalClientError)


def _closed(connection: Any) -> bool:
    if connection is None:
        return False
    try:
        return bool(connection.is_closed())
    except pgerr.InterfaceError:  # released back to the pool: the pool saw it close
        return True


def _lost(error: BaseException, connection: Any) -> bool:
    """The error is the connection's loss: the server said so, or the call failed the way
    calls fail on a connection closed under them."""
    return _server_gone(error) or (isinstance(error, _ON_A_LOST_CONNECTION) and _closed(connection))


def _unavailable(error: BaseException) -> DatabaseUnavailable:
    return DatabaseUnavailable(f"the database is unavailable: {type(error).__name__}")


class _Acquire(PoolAcquireContext):
    """Getting a connection, any OSError (refused, reset, timed out) is an outage too; inside
    the block, only when the connection was lost with it: a timeout of the block's own (an
    ``asyncio.timeout``, a call to another server) stays what it is. A statement a migration
    changed the result of is retryable too (``SchemaChanged``)."""

    __slots__ = ()

    async def __aenter__(self) -> Any:
        try:
            return await super().__aenter__()
        except BaseException as error:
            if _server_gone(error) or isinstance(error, OSError):
                raise _unavailable(error) from error
            raise

    async def __aexit__(self, *info: object) -> None:
        exc = info[1] if len(info) > 1 and isinstance(info[1], BaseException) else None
        connection = self.connection
        lost = exc is not None and _lost(exc, connection)
        try:
            await super().__aexit__(*info)
        except BaseException as error:
            # The release resets the session; on a lost connection that fails as any call
            # does (asyncpg terminates the connection then).
            if isinstance(error, OSError) or _lost(error, connection):
                raise _unavailable(error) from (exc or error)
            raise
        if lost:
            assert exc is not None
            raise _unavailable(exc) from exc
        if isinstance(exc, pgerr.InvalidCachedStatementError):
            raise SchemaChanged("the schema changed under a prepared statement; try again") from exc


if TYPE_CHECKING:
    _PoolBase: TypeAlias = asyncpg.Pool[asyncpg.Record]
else:
    _PoolBase = asyncpg.Pool


class _Pool(_PoolBase):
    __slots__ = ()

    def acquire(self, *, timeout: float | None = None) -> Any:
        return _Acquire(self, timeout)


async def _init_connection(conn: Conn) -> None:
    for typ in ("json", "jsonb"):
        await conn.set_type_codec(typ, encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def connect(
    dsn: str,
    tls: ssl.SSLContext | None = None,
    server_settings: Mapping[str, str] | None = None,
) -> asyncpg.Connection[asyncpg.Record]:
    """One connection (start-up checks, operator commands, a listener); over TLS with
    ``tls``."""
    kwargs: dict[str, Any] = {}
    if server_settings is not None:
        kwargs["server_settings"] = dict(server_settings)
    if tls is not None:
        kwargs["ssl"] = tls
    return await asyncpg.connect(dsn, **kwargs)


async def create_pool(
    dsn: str,
    *,
    min_size: int = 1,
    max_size: int = 10,
    server_settings: Mapping[str, str] | None = None,
    tls: ssl.SSLContext | None = None,
    **kwargs: Any,
) -> asyncpg.Pool[asyncpg.Record]:
    """A pool on ``dsn``; over TLS with ``tls`` (else as the DSN says)."""
    settings = {"application_name": "duetime", "timezone": "UTC", **(server_settings or {})}
    if tls is not None:
        kwargs["ssl"] = tls
    # asyncpg.create_pool's own defaults, with the pool class that maps outages.
    pool = _Pool(
        dsn,
        connection_class=asyncpg.Connection,
        record_class=asyncpg.Record,
        init_size=None,
        min_size=min_size,
        max_size=max_size,
        max_queries=50_000,
        max_inactive_connection_lifetime=300.0,
        loop=None,
        connect=None,
        setup=None,
        init=_init_connection,
        reset=None,
        server_settings=settings,
        **kwargs,
    )
    await pool
    return pool
