"""One client of ``bench/herd --peer floor``, a process of its own:
``python -m bench.floor_client --url URL --keys FIRST COUNT --at UNIX_SECONDS [--client C]``.

What a herd asks of any scheduler's worker at its instant, and nothing else: sleep until
``--at`` (the host's clock, never a call before it), then POST once for each of its COUNT keys
at once (``Idempotency-Key: floor-<n>``, no body, as the herd's jobs), through one client with
at most ``--connections`` connections to the host (Duetime's worker keeps 256), set as the
worker's clients are (no cookies, no proxies from the environment, no decompression). No
database, no queue, no bookkeeping: below its lateness and CPU no design with this client goes
on this machine. ``--client pyreqwest`` (Rust's reqwest behind a Python API, as the worker
calls) or ``aiohttp`` (as PgQueuer's jobs in bench/herd call).

Prints ``BENCH_FLOOR_READY`` once its client is made and ``BENCH_FLOOR_DONE <failures>`` once
every call is answered, then waits for SIGTERM (the bench reads its CPU until then).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack

import aiohttp
import uvloop
from pyreqwest.client import ClientBuilder

READY = "BENCH_FLOOR_READY"
DONE = "BENCH_FLOOR_DONE"
CLIENTS = ("aiohttp", "pyreqwest")

Post = Callable[[str], Awaitable[bool]]


async def aiohttp_post(stack: AsyncExitStack, url: str, connections: int) -> Post:
    session = await stack.enter_async_context(
        aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=connections),
            auto_decompress=False,
            trust_env=False,
            cookie_jar=aiohttp.DummyCookieJar(),
        )
    )

    async def post(key: str) -> bool:
        headers = {"Idempotency-Key": key}
        async with session.post(url, headers=headers, allow_redirects=False) as response:
            await response.read()
            return response.status == 200

    return post


async def pyreqwest_post(stack: AsyncExitStack, url: str, connections: int) -> Post:

    client = await stack.enter_async_context(
        ClientBuilder().max_connections(connections).no_proxy().build()
    )

    async def post(key: str) -> bool:
        request = client.post(url).header("Idempotency-Key", key).build()
        response = await request.send()
        await response.bytes()
        status: int = response.status
        return status == 200

    return post


async def until(at: float) -> None:
    """Sleeps until the host's clock reads ``at`` or later: the loop's timer may round its
    delay down a millisecond, and the wall clock may be slewed while it waits."""
    await asyncio.sleep(max(0.0, at - time.time()) + 0.002)
    if (left := at - time.time()) > 0:
        await asyncio.sleep(left + 0.002)
    if time.time() < at:
        raise RuntimeError("woke before the instant")


async def serve(url: str, first: int, count: int, at: float, client: str, connections: int) -> None:
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    async with AsyncExitStack() as stack:
        make = aiohttp_post if client == "aiohttp" else pyreqwest_post
        post = await make(stack, url, connections)
        keys = [f"floor-{n}" for n in range(first, first + count)]
        print(READY, flush=True)
        await until(at)
        answered = await asyncio.gather(*(post(key) for key in keys), return_exceptions=True)
        print(f"{DONE} {sum(ok is not True for ok in answered)}", flush=True)
        await stopping.wait()


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--keys", type=int, nargs=2, metavar=("FIRST", "COUNT"), required=True)
    parser.add_argument("--at", type=float, required=True, help="Unix time of the instant")
    parser.add_argument("--client", choices=CLIENTS, default="aiohttp")
    parser.add_argument("--connections", type=int, default=256)
    args = parser.parse_args()
    first, count = args.keys
    uvloop.run(serve(args.url, first, count, args.at, args.client, args.connections))


if __name__ == "__main__":
    run()
