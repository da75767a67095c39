"""`python -m duetime_console`: the web console, over HTTPS, a client of the API."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Generator

import uvicorn

from duetime_console.api import Api
from duetime_console.app import build_app
from duetime_console.config import Settings
from duetime_console.session import SessionSealer
from duetime_infra.config import ConfigError
from duetime_infra.grpc.server import run_until_terminated
from duetime_infra.logs import configure_logging
from duetime_infra.startup import announce_serving, run_service
from duetime_infra.tls import Link, warn_plaintext

log = logging.getLogger("duetime_console")
# uvicorn says when it starts and stops; the console says so once, as every service does.
logging.getLogger("uvicorn.error").setLevel(logging.WARNING)


class _Server(uvicorn.Server):
    """uvicorn, told when it listens, and leaving signals to ``run_until_terminated``."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self.listening.set()


def _listen(address: str) -> socket.socket:
    host, _, port = address.rpartition(":")
    try:
        return socket.create_server((host.strip("[]"), int(port)), backlog=1024)
    except OSError as error:
        raise ConfigError(f"DUETIME_CONSOLE_ADDRESS={address}: cannot listen: {error}") from None


async def serve(settings: Settings) -> None:
    warn_plaintext(settings.tls)
    api = Api(settings.api_address, settings.tls.client(Link.GRPC))
    sealer = SessionSealer(settings.session_keys, settings.session_lifetime.total_seconds())
    app = build_app(api, sealer, settings.metrics_targets)
    listener = _listen(settings.listen_address)
    config = uvicorn.Config(
        app,
        ssl_certfile=settings.tls.cert_file,
        ssl_keyfile=settings.tls.key_file,
        log_config=None,
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=int(settings.shutdown_grace_seconds),
    )
    server = _Server(config)
    serving: asyncio.Task[None] | None = None

    async def start() -> None:
        nonlocal serving
        serving = asyncio.create_task(server.serve(sockets=[listener]))
        listening = asyncio.create_task(server.listening.wait())
        await asyncio.wait([serving, listening], return_when=asyncio.FIRST_COMPLETED)
        if not server.listening.is_set():
            listening.cancel()
            raise ConfigError("the console's HTTPS server did not start")
        port = listener.getsockname()[1]
        announce_serving(log, "console", "DUETIME_CONSOLE_PORT", port, api=settings.api_address)

    async def stop() -> None:
        server.should_exit = True
        if serving is not None:
            await serving

    await run_until_terminated(start, stop)


def main() -> None:
    configure_logging()
    run_service("duetime_console", lambda: serve(Settings.from_env()))


if __name__ == "__main__":
    main()
