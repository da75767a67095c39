"""What every service does first: tune the garbage collector for a long-running asyncio
service, and refuse to run against a schema it does not support; and how it says it serves."""

from __future__ import annotations

import asyncio
import gc
import logging
import ssl
import sys
from collections.abc import Callable, Coroutine
from typing import Any

import uvloop

from duetime_core.errors import DuetimeError
from duetime_infra.config import ConfigError
from duetime_infra.pg.migrate import check_schema
from duetime_infra.pg.pool import connect


async def require_schema(dsn: str, tls: ssl.SSLContext | None = None) -> int:
    conn = await connect(dsn, tls)
    try:
        return await check_schema(conn)
    finally:
        await conn.close()


# The collector's first-generation threshold (CPython's default is 700): a young collection
# comes once allocations outnumber deallocations by this many. A batch or a herd allocates tens
# of objects a run in every service (tasks, futures, protobuf messages, records), and most are
# still alive when a young collection comes: each collection scans them, and each tenth (of the
# middle generation too) scans again all that survived the nine before. In a worker, runs in
# flight by the thousand made those scans a sixth of its CPU at a herd's instant
# (measured with `bench/herd --profile`). Collecting rarely lets most of those objects die of their
# reference counts first; a young collection then stalls the loop for tens of milliseconds (a
# tenth one, with the middle generation, longer), and a few tens of MB more wait meanwhile.
GC_FIRST_GENERATION = 200_000


def announce_serving(
    logger: logging.Logger, service: str, port_line: str, port: int, **fields: object
) -> None:
    """Logs that ``service`` serves on ``port`` and prints ``<port_line>=<port>`` (e.g.
    DUETIME_API_PORT): the line lets a launcher that asked for port 0 learn the real one."""
    logger.info(f"{service} serving", extra={"action": "serving", "port": port, **fields})
    print(f"{port_line}={port}", flush=True)


def tune_collector() -> None:
    """Fewer, larger young collections; and the objects alive once the modules are loaded
    (classes, functions, protobuf descriptors: tens of thousands, alive for the process's
    life) frozen out of every collection."""
    _, second, third = gc.get_threshold()
    gc.set_threshold(GC_FIRST_GENERATION, second, third)
    gc.freeze()


def run_service(name: str, main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Runs a service's main coroutine on uvloop (libuv's event loop: the same asyncio, less
    CPU a callback, a socket read, a timer); a refusal to start is one clear line and exit
    code 1."""
    tune_collector()
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main())
    except (DuetimeError, ConfigError) as error:
        print(f"{name}: cannot start: {error}", file=sys.stderr)
        sys.exit(1)
