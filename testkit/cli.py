"""The real ``duetime`` command, run as a process the way a person or a script runs it."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
from google.protobuf import json_format
from google.protobuf.message import Message

from duetime.jobs.v1 import job_service_pb2_grpc
from duetime_infra.admin import create_operator_token, create_team
from testkit.databases import create_database, drop_database
from testkit.processes import service
from testkit.tls import service_channel

# Variables of the person running the tests that would change what the command prints or
# where it connects (GRPC_VERBOSITY: gRPC's own log lines); and PYTHONDONTWRITEBYTECODE, so the
# command starts as it does for a person (from cached bytecode after its first run) instead of
# compiling every module every time.
_SCRUBBED = (
    "DUETIME_API", "DUETIME_TOKEN", "DUETIME_TEAM", "DUETIME_OPERATOR_TOKEN", "COLUMNS",
    "FORCE_COLOR", "NO_COLOR", "GRPC_VERBOSITY", "PYTHONDONTWRITEBYTECODE",
)  # fmt: skip


# Generous for a command that follows a run (--wait brings its own --timeout).
COMMAND_TIMEOUT = 90.0


def duetime_command() -> str:
    """The console script that `uv sync` (scripts/tools) installs beside the interpreter."""
    path = Path(sys.executable).parent / "duetime"
    assert path.exists(), f"{path} is missing: run scripts/tools"
    return str(path)


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def error(self) -> dict[str, Any]:
        """The failure that ``-o json`` prints on stderr."""
        error: dict[str, Any] = json.loads(self.stderr)["error"]
        return error

    def detail(self) -> dict[str, str]:
        """A detail grid (``Name   teams/...``) on stdout as a dict of its rows, up to the
        first blank line."""
        grid = self.stdout.split("\n\n", 1)[0]
        rows = [re.match(r"^(\S.*?)\s{2,}(.*?)\s*$", line) for line in grid.splitlines()]
        out = {row[1]: row[2] for row in rows if row}
        assert out, self.stdout
        return out

    def table(self, first_column: str) -> list[dict[str, str]]:
        """The list table on stdout whose heading starts with ``first_column``: one dict a
        row, by heading (headings are split where two spaces or more part them)."""
        lines = self.stdout.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith(first_column))
        heads = [(m[0], m.start()) for m in re.finditer(r"\S+(?: \S+)*", lines[start])]
        bounds = [at for _, at in heads[1:]] + [None]
        rows = []
        for line in lines[start + 2 :]:
            if not line.strip():
                break
            cells = [line[at:end].strip() for (_, at), end in zip(heads, bounds, strict=True)]
            rows.append(dict(zip([h for h, _ in heads], cells, strict=True)))
        return rows


def cli_env(
    api: str, token: str, extra: Mapping[str, str] = {}, operator_token: str = ""
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    env |= {"DUETIME_API": api, "DUETIME_TOKEN": token}
    if operator_token:
        env["DUETIME_OPERATOR_TOKEN"] = operator_token
    return {**env, **extra}


@dataclass(frozen=True)
class Cli:
    """``duetime`` pointed at one API with one team's token, and an operator's if given
    (through DUETIME_API, DUETIME_TOKEN and DUETIME_OPERATOR_TOKEN, as a person sets them)."""

    api: str
    token: str
    team: str
    operator_token: str = ""

    async def __call__(self, *args: str, env: Mapping[str, str] = {}) -> Result:
        process = await asyncio.create_subprocess_exec(
            duetime_command(),
            *args,
            env=cli_env(self.api, self.token, env, self.operator_token),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), COMMAND_TIMEOUT)
        assert process.returncode is not None
        return Result(process.returncode, out.decode(), err.decode())

    async def ok(self, *args: str, env: Mapping[str, str] = {}) -> Result:
        """Runs the command and insists it succeeded."""
        result = await self(*args, env=env)
        assert result.code == 0, f"duetime {' '.join(args)} exited {result.code}:\n{result}"
        return result


async def api_response(cli: Cli, rpc: str, request: Message) -> dict[str, Any]:
    """What the API itself answers ``cli``'s team, in proto3 JSON: what ``-o json`` must
    print."""
    async with service_channel(cli.api) as channel:
        stub = job_service_pb2_grpc.JobServiceStub(channel)
        metadata = (("authorization", f"Bearer {cli.token}"),)
        response = await getattr(stub, rpc)(request, metadata=metadata)
    return json_format.MessageToDict(response)


async def team_cli(dsn: str, api: str, team: str) -> Cli:
    """A new team (with its token) in the database behind ``api``, and ``duetime`` for it."""
    conn = await asyncpg.connect(dsn)
    try:
        token = await create_team(conn, team)
    finally:
        await conn.close()
    return Cli(api, token, team)


async def operator_token(dsn: str) -> str:
    """A new operator token in the database ``dsn``."""
    conn = await asyncpg.connect(dsn)
    try:
        return await create_operator_token(conn, "tests")
    finally:
        await conn.close()


@asynccontextmanager
async def api_on_own_database(template_db: str) -> AsyncIterator[tuple[str, str]]:
    """One API process on a database of its own (cloned from ``template_db``): its address
    and the database's DSN."""
    name = f"duetime_t_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name, template=template_db)
    env = {"DUETIME_PG_DSN": dsn, "DUETIME_API_ADDRESS": "127.0.0.1:0"}
    try:
        async with service("duetime_api", env, "DUETIME_API_PORT") as process:
            yield process.address, dsn
    finally:
        await drop_database(name)
