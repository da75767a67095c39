"""An etcd of one test's own on free ports: serving TLS that requires client certificates
(``--client-cert-auth``), as the stack's TLS port does (scripts/lib/stack_etcd.sh), or
plaintext; one that can be stopped (or killed) and started again on the same ports and data."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from testkit.kafka import free_port
from testkit.tls import Certs

ETCD = "/usr/bin/etcd"
READY = b"ready to serve client requests"


class PrivateEtcd:
    """A one-member etcd with its data and log in ``directory``."""

    def __init__(self, directory: Path, certs: Certs | None = None) -> None:
        self.directory = directory
        self.certs = certs
        self.port, self.peer_port = free_port(), free_port()
        self.log = directory / "etcd.log"
        self._process: asyncio.subprocess.Process | None = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _argv(self) -> list[str]:
        scheme = "http" if self.certs is None else "https"
        client_url = f"{scheme}://127.0.0.1:{self.port}"
        peer_url = f"http://127.0.0.1:{self.peer_port}"
        argv = [
            ETCD, "--name", "t", "--data-dir", str(self.directory / "data"),
            "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
            "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", f"t={peer_url}",
        ]  # fmt: skip
        if self.certs is not None:
            argv += ["--cert-file", self.certs.cert, "--key-file", self.certs.key]
            argv += ["--trusted-ca-file", self.certs.ca, "--client-cert-auth"]
        return argv

    async def start(self, within: float = 30) -> None:
        """Starts the member and waits until it serves clients (this start's log says so)."""
        assert self._process is None
        self.directory.mkdir(parents=True, exist_ok=True)
        logged = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as out:
            self._process = await asyncio.create_subprocess_exec(
                *self._argv(),
                stdout=out,
                stderr=asyncio.subprocess.STDOUT,
                stdin=asyncio.subprocess.DEVNULL,
            )
        deadline = time.monotonic() + within
        while READY not in self.log.read_bytes()[logged:]:
            if self._process.returncode is not None or time.monotonic() > deadline:
                raise AssertionError(f"private etcd did not start:\n{self.tail()}")
            await asyncio.sleep(0.1)

    async def stop(self, sig: signal.Signals = signal.SIGTERM) -> None:
        """Ends the member with ``sig`` (SIGKILL: a crash), SIGKILL after 10 s."""
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        process.send_signal(sig)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), 10)
        if process.returncode is None:
            process.kill()
            await process.wait()

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


@asynccontextmanager
async def private_etcd(directory: Path, certs: Certs | None = None) -> AsyncIterator[PrivateEtcd]:
    """A running member, stopped afterwards."""
    etcd = PrivateEtcd(directory, certs)
    await etcd.start()
    try:
        yield etcd
    finally:
        await etcd.stop()


@asynccontextmanager
async def private_tls_etcd(directory: Path, certs: Certs) -> AsyncIterator[str]:
    """A running one-member etcd serving TLS; yields its endpoint, host:port."""
    async with private_etcd(directory, certs) as etcd:
        yield etcd.endpoint
