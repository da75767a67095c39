"""A real S3 endpoint for the archive's tests and bench: moto's server mode as a process of its
own on a free loopback port (fixture ``s3``, one a session; ``private_s3`` for a test that
stops its server), and each test's own bucket in it."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from duetime_infra.archive.settings import ArchiveSettings
from testkit.kafka import free_port

# moto accepts any key pair.
KEY_ID, SECRET = "duetime-test", "duetime-test-secret"


class MotoServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.log = Path(tempfile.mkdtemp(prefix="duetime-s3-")) / "moto.log"
        self._process: asyncio.subprocess.Process | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, within: float = 30) -> None:
        """Starts the server and waits until its port answers."""
        with self.log.open("ab") as out:
            self._process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port),
                stdout=out, stderr=asyncio.subprocess.STDOUT, stdin=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
        deadline = time.monotonic() + within
        while not _answers(self.port):
            if self._process.returncode is not None or time.monotonic() > deadline:
                raise AssertionError(f"moto did not start:\n{self.tail()}")
            await asyncio.sleep(0.05)

    async def stop(self, sig: signal.Signals = signal.SIGTERM) -> None:
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

    def settings(self, bucket: str, hot_retention_days: int = 7) -> ArchiveSettings:
        return ArchiveSettings(
            bucket=bucket,
            prefix="duetime/runs",
            endpoint_url=self.endpoint_url,
            region="us-east-1",
            hot_retention=timedelta(days=hot_retention_days),
            access_key_id=KEY_ID,
            secret_access_key=SECRET,
        )

    def environ(self, bucket: str, hot_retention_days: int = 7) -> dict[str, str]:
        """The ``DUETIME_ARCHIVE_*`` variables a service needs to use ``bucket`` here."""
        return {
            "DUETIME_ARCHIVE_BUCKET": bucket,
            "DUETIME_ARCHIVE_ENDPOINT_URL": self.endpoint_url,
            "DUETIME_ARCHIVE_ACCESS_KEY_ID": KEY_ID,
            "DUETIME_ARCHIVE_SECRET_ACCESS_KEY": SECRET,
            "DUETIME_ARCHIVE_HOT_RETENTION_DAYS": str(hot_retention_days),
        }

    def new_bucket(self) -> str:
        """A fresh bucket of the caller's own."""
        name = f"duetime-{uuid.uuid4().hex[:16]}"
        filesystem(self).create_dir(name)
        return name


def filesystem(server: MotoServer) -> pafs.S3FileSystem:
    return pafs.S3FileSystem(
        access_key=KEY_ID,
        secret_key=SECRET,
        region="us-east-1",
        endpoint_override=f"127.0.0.1:{server.port}",
        scheme="http",
        allow_bucket_creation=True,
    )


def _answers(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
        return True
    return False


@asynccontextmanager
async def private_s3() -> AsyncIterator[MotoServer]:
    """A running server of the caller's own, stopped afterwards."""
    server = MotoServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture(scope="session")
async def s3() -> AsyncIterator[MotoServer]:
    async with private_s3() as server:
        yield server
