"""`duetime-ops`, the operator's one entry point, as an operator runs it (the installed console
script, in a process of its own) on a real database: teams, tokens and quotas, and keyring files.
The migration and Kafka group commands have their tests beside the code they run
(test_migrations.py, test_kafka_groups.py)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import asyncpg

from duetime_core.identity import Role, token_digest
from duetime_infra.pg.teams import store as team_store
from duetime_infra.secrets.keyring import parse_keyring

# The console script uv installs beside the interpreter.
OPS = str(Path(sys.executable).with_name("duetime-ops"))


async def ops(*args: str) -> str:
    """Runs ``duetime-ops ARGS``; its stdout, or the test fails with its stderr."""
    process = await asyncio.create_subprocess_exec(
        OPS, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, err.decode()
    return out.decode()


async def test_admin_makes_a_team_its_token_and_its_quota(db_dsn: str) -> None:
    token = (await ops("admin", "--dsn", db_dsn, "create-team", "ops-team")).strip()
    limits = await ops("admin", "--dsn", db_dsn, "set-quota", "ops-team", "max_running=3")
    assert "max_running=3" in limits.split()
    operator = (await ops("admin", "--dsn", db_dsn, "create-operator-token")).strip()
    conn = await asyncpg.connect(db_dsn)
    try:
        principal = await team_store.principal_for(conn, token_digest(token))
        assert principal is not None
        assert (principal.role, principal.team_id) == (Role.TEAM, "ops-team")
        assert (await team_store.get_team(conn, "ops-team")).quota.max_running == 3
        admin = await team_store.principal_for(conn, token_digest(operator))
        assert admin is not None
        assert admin.role is Role.OPERATOR
        assert await ops("admin", "--dsn", db_dsn, "revoke-token", token) == "revoked\n"
        assert await team_store.principal_for(conn, token_digest(token)) is None
    finally:
        await conn.close()


async def test_secrets_makes_and_changes_a_keyring_file(tmp_path: Path) -> None:
    keyring = tmp_path / "keyring.json"
    keyring.write_text(await ops("secrets", "new-keyring", "--key-id", "old"))
    await ops("secrets", "add-key", str(keyring), "--key-id", "new")
    assert parse_keyring(keyring.read_text()).current == "new"
    assert keyring.stat().st_mode & 0o777 == 0o600
    await ops("secrets", "remove-key", str(keyring), "--key-id", "old")
    assert list(json.loads(keyring.read_text())["keys"]) == ["new"]
