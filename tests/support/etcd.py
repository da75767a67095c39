"""An etcd of one test's own on free ports, serving TLS that requires client certificates
(``--client-cert-auth``), as the stack's TLS port does (scripts/lib/stack_etcd.sh)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.support.kafka import free_port
from tests.support.tls import Certs

ETCD = "/usr/bin/etcd"


@asynccontextmanager
async def private_tls_etcd(directory: Path, certs: Certs) -> AsyncIterator[str]:
    """A running one-member etcd; yields its TLS endpoint, host:port."""
    port, peer = free_port(), free_port()
    client_url = f"https://127.0.0.1:{port}"
    peer_url = f"http://127.0.0.1:{peer}"
    log = directory / "etcd.log"
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            ETCD, "--name", "t", "--data-dir", str(directory / "data"),
            "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
            "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", f"t={peer_url}",
            "--cert-file", certs.cert, "--key-file", certs.key,
            "--trusted-ca-file", certs.ca, "--client-cert-auth",
            stdout=out, stderr=asyncio.subprocess.STDOUT, stdin=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while b"ready to serve client requests" not in log.read_bytes():
            if process.returncode is not None or time.monotonic() > deadline:
                raise AssertionError(f"private etcd did not start:\n{log.read_text()[-3000:]}")
            await asyncio.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 10)
            if process.returncode is None:
                process.kill()
                await process.wait()
