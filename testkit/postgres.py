"""A PostgreSQL server of one test's own, on a free port, that the test may stop and start
(a restart under running services) and may serve TLS; set up as scripts/lib/stack_postgres.sh
does it, from Debian's server binaries, run by the ``postgres`` user (they refuse root)."""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg

from duetime_infra.pg.migrate import apply_migrations
from testkit.kafka import free_port
from testkit.tls import Certs


def _bindir() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not found:
        raise AssertionError("no PostgreSQL server binaries: run scripts/stack up")
    return os.path.dirname(found[-1])


class PrivatePostgres:
    """A cluster in a folder the ``postgres`` user owns (a test's tmp_path sits under one only
    root may enter), role and database ``duetime`` with the schema migrated."""

    def __init__(self, certs: Certs | None = None) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="duetime-pg-"))
        shutil.chown(self.directory, "postgres", "postgres")
        self.data = self.directory / "data"
        self.log = self.directory / "postgres.log"
        self.port = free_port()
        self.certs = certs
        self._bin = _bindir()

    @property
    def dsn(self) -> str:
        return f"postgresql://duetime:duetime@127.0.0.1:{self.port}/duetime"

    async def _as_postgres(self, *argv: str) -> None:
        process = await asyncio.create_subprocess_exec(
            "runuser", "-u", "postgres", "--", *argv,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            stdin=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(process.communicate(), 60)
        if process.returncode != 0:
            raise AssertionError(f"{argv[0]} failed: {out.decode(errors='replace')}\n{self.tail()}")

    async def init(self) -> None:
        await self._as_postgres(
            f"{self._bin}/initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
            "--encoding=UTF8", "--no-locale", "--no-sync",
        )  # fmt: skip
        conf = [
            "listen_addresses = '127.0.0.1'",
            f"port = {self.port}",
            f"unix_socket_directories = '{self.directory}'",
            "fsync = off",
            "synchronous_commit = off",
            "full_page_writes = off",
            "timezone = 'UTC'",
        ]
        if self.certs is not None:
            for source, name, mode in (
                (self.certs.cert, "server.crt", 0o644),
                (self.certs.key, "server.key", 0o600),
            ):
                target = self.data / name
                shutil.copyfile(source, target)
                target.chmod(mode)
                shutil.chown(target, "postgres", "postgres")
            conf += ["ssl = on", "ssl_cert_file = 'server.crt'", "ssl_key_file = 'server.key'"]
        with (self.data / "postgresql.conf").open("a") as file:
            file.write("\n".join(conf) + "\n")

    async def start(self) -> None:
        await self._as_postgres(
            f"{self._bin}/pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
            "start",
        )  # fmt: skip

    async def stop(self) -> None:
        await self._as_postgres(f"{self._bin}/pg_ctl", "-D", str(self.data), "-m", "fast", "stop")

    async def create_schema(self) -> None:
        admin = await asyncpg.connect(
            f"postgresql://postgres@127.0.0.1:{self.port}/postgres", ssl=False
        )
        try:
            await admin.execute("CREATE ROLE duetime LOGIN PASSWORD 'duetime'")
            await admin.execute("CREATE DATABASE duetime OWNER duetime")
        finally:
            await admin.close()
        conn = await asyncpg.connect(self.dsn, ssl=False)
        try:
            await apply_migrations(conn)
        finally:
            await conn.close()

    def tail(self, lines: int = 30) -> str:
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


@asynccontextmanager
async def private_postgres(certs: Certs | None = None) -> AsyncIterator[PrivatePostgres]:
    """A running private server with the schema, stopped and deleted afterwards."""
    server = PrivatePostgres(certs)
    try:
        await server.init()
        await server.start()
        await server.create_schema()
        yield server
    finally:
        if (server.data / "postmaster.pid").exists():
            await server.stop()
        shutil.rmtree(server.directory, ignore_errors=True)
