"""The real ``duetime`` command, run as a process the way a person or a script runs it."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from duetime_infra.admin import create_team

# Variables of the person running the tests that would change what the command prints or
# where it connects; and PYTHONDONTWRITEBYTECODE, so the command starts as it does for a person
# (from cached bytecode after its first run) instead of compiling every module every time.
_SCRUBBED = (
    "DUETIME_API", "DUETIME_TOKEN", "DUETIME_TEAM", "COLUMNS", "FORCE_COLOR", "NO_COLOR",
    "PYTHONDONTWRITEBYTECODE",
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


def cli_env(api: str, token: str, extra: Mapping[str, str] = {}) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    return {**env, "DUETIME_API": api, "DUETIME_TOKEN": token, **extra}


@dataclass(frozen=True)
class Cli:
    """``duetime`` pointed at one API with one team's token (through DUETIME_API and
    DUETIME_TOKEN, as a person sets them)."""

    api: str
    token: str
    team: str

    async def __call__(self, *args: str, env: Mapping[str, str] = {}) -> Result:
        process = await asyncio.create_subprocess_exec(
            duetime_command(),
            *args,
            env=cli_env(self.api, self.token, env),
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


async def team_cli(dsn: str, api: str, team: str) -> Cli:
    """A new team (with its token) in the database behind ``api``, and ``duetime`` for it."""
    conn = await asyncpg.connect(dsn)
    try:
        token = await create_team(conn, team)
    finally:
        await conn.close()
    return Cli(api, token, team)
