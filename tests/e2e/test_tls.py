"""The system as the end-to-end tests run it is encrypted: a run goes through with the worker
authenticated by its client certificate alone (no token), every database session of the
services is TLS where the stack's PostgreSQL serves it, and no service warns of a plaintext
connection the stack could have encrypted."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from duetime.jobs.v1 import run_pb2
from testkit.http_target import Behaviour, http_target
from testkit.polling import eventually
from testkit.system import http_job, running_system
from testkit.tls import service_client_tls, with_stack_tls

pytestmark = pytest.mark.timeout(90)

PLAINTEXT_WARNING = re.compile(r"PLAINTEXT connections: ([a-z, ]+) \(DUETIME_PLAINTEXT\)")


async def test_the_system_runs_over_tls(db_dsn: str) -> None:
    if service_client_tls() is None:
        pytest.fail('the environment names no TLS settings: eval "$(scripts/stack env)"')
    async with http_target() as target, running_system(db_dsn) as system:
        assert system.mtls
        assert system.worker_env("w")["DUETIME_WORKER_TOKEN"] == ""
        soon = datetime.now(UTC) + timedelta(seconds=1)
        job = await system.api.create(http_job("over tls", target.on("/tls", Behaviour()), at=soon))

        async def succeeded() -> bool:
            runs = await system.api.runs(job)
            return [r.state for r in runs] == [run_pb2.RUN_STATE_SUCCEEDED]

        await eventually(succeeded, 30, "the run succeeded")
        assert len(target.calls_to("/tls")) == 1

        conn = await asyncpg.connect(db_dsn)
        try:
            sessions = await conn.fetch(
                "SELECT a.application_name, s.ssl FROM pg_stat_activity a "
                "JOIN pg_stat_ssl s USING (pid) "
                "WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() "
                "AND a.application_name LIKE 'duetime%'"
            )
        finally:
            await conn.close()
        assert sessions, "the services hold database sessions"
        pg_tls = bool(os.environ.get("DUETIME_PG_SSLMODE"))
        assert {row["ssl"] for row in sessions} == {pg_tls}

        # Only what the stack serves no TLS for is plaintext (nothing, on CI's stack).
        allowed = {p for p in with_stack_tls({})["DUETIME_PLAINTEXT"].split(",") if p}
        services = [system.api_service, system.scheduler, system.relay, *system.workers.values()]
        for service in services:
            for line in service.output:
                if found := PLAINTEXT_WARNING.search(line):
                    assert set(found[1].split(", ")) <= allowed, line
