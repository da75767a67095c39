"""`python -m bench.target --out FILE`: the benchmarks' HTTP target, a process of its own.

Answers every request 200 at once and records when it arrived (the host's wall clock), its
path and its ``Idempotency-Key`` and ``Duetime-Attempt`` headers. Prints
``BENCH_TARGET_PORT=<port>`` once listening (on 127.0.0.1 and 127.0.0.2); on SIGTERM writes
the calls to FILE, one JSON array per line, and exits. Running apart from the bench keeps its
CPU out of the bench's and lets both peers (Duetime and PgQueuer) call the same kind of target.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import time
from pathlib import Path

from aiohttp import web

HOSTS = ("127.0.0.1", "127.0.0.2")


async def serve(out: Path) -> None:
    calls: list[tuple[int, str, str, str]] = []

    async def handle(request: web.Request) -> web.Response:
        arrived = time.time_ns()
        await request.read()
        headers = request.headers
        calls.append(
            (
                arrived,
                request.path,
                headers.get("Idempotency-Key", ""),
                headers.get("Duetime-Attempt", ""),
            )
        )
        return web.Response(text="ok\n")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    # Herds open thousands of connections at once: a production-sized accept queue. The same
    # port on two loopback addresses, so a bench can give teams hosts of their own.
    site = web.TCPSite(runner, HOSTS[0], 0, backlog=4096)
    await site.start()
    port = runner.addresses[0][1]
    for host in HOSTS[1:]:
        await web.TCPSite(runner, host, port, backlog=4096).start()
    print(f"BENCH_TARGET_PORT={port}", flush=True)
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    await stopping.wait()
    await runner.cleanup()
    with out.open("w") as file:
        for call in calls:
            file.write(json.dumps(call) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    asyncio.run(serve(parser.parse_args().out))


if __name__ == "__main__":
    main()
