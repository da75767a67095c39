"""The live system the HTTP end-to-end tests share: the four services as processes on a fresh
database, with the gateway in front of the api, a real HTTP target, the team's HTTP client and
an operator token. The workers sign calls as ``ISSUER``."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import asyncpg

from duetime_infra.admin import create_operator_token
from testkit.databases import create_database, drop_database
from testkit.gateway import HttpApi, http_api
from testkit.http_target import HttpTarget, http_target
from testkit.processes import Service
from testkit.system import System, running_system

# The issuer of the ID tokens of signed calls (DUETIME_SIGNING_ISSUER on the workers).
ISSUER = "https://duetime.example"


@dataclass
class Live:
    system: System
    target: HttpTarget
    api: HttpApi  # with the team's token
    operator_token: str

    @property
    def gateway(self) -> Service:
        assert self.system.gateway is not None
        return self.system.gateway


@asynccontextmanager
async def live_system(template_db: str) -> AsyncIterator[Live]:
    """The live system on a fresh database made from ``template_db``, dropped after."""
    name = f"duetime_t_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name, template=template_db)
    try:
        conn = await asyncpg.connect(dsn)
        try:
            operator = await create_operator_token(conn)
        finally:
            await conn.close()
        async with (
            http_target() as target,
            running_system(
                dsn, gateway=True, worker_extra={"DUETIME_SIGNING_ISSUER": ISSUER}
            ) as system,
        ):
            assert system.gateway is not None
            async with http_api(system.gateway, system.team_token, system.common_env) as api:
                yield Live(system, target, api, operator)
    finally:
        await drop_database(name)
