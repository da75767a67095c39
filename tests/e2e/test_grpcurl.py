"""An engineer with grpcurl: list, describe and call the API process through reflection,
over TLS (``-cacert``) as the README's tour shows."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from duetime_infra.admin import create_operator_token, create_team
from testkit.databases import create_database, drop_database
from testkit.processes import Service, service, tool
from testkit.tls import grpcurl_tls_args


@pytest.fixture
async def api_process(db_dsn: str) -> AsyncIterator[tuple[Service, str]]:
    conn = await asyncpg.connect(db_dsn)
    try:
        token = await create_team(conn, "payments")
    finally:
        await conn.close()
    env = {"DUETIME_PG_DSN": db_dsn, "DUETIME_API_ADDRESS": "127.0.0.1:0"}
    async with service("duetime_api", env, "DUETIME_API_PORT") as api:
        yield api, token


async def grpcurl(address: str, *args: str, token: str | None = None, data: Any = None) -> str:
    argv = [tool("grpcurl"), *grpcurl_tls_args()]
    if token:
        argv += ["-H", f"authorization: Bearer {token}"]
    if data is not None:
        argv += ["-d", json.dumps(data)]
    argv += [address, *args]
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    if process.returncode != 0:
        raise AssertionError(f"grpcurl {' '.join(args)} failed: {err.decode()}{out.decode()}")
    return out.decode()


async def test_grpcurl_lists_describes_and_drives_the_api(api_process: tuple[Service, str]) -> None:
    api, token = api_process
    services = (await grpcurl(api.address, "list")).split()
    assert "duetime.jobs.v1.JobService" in services
    assert "grpc.health.v1.Health" in services
    described = await grpcurl(api.address, "describe", "duetime.jobs.v1.JobService")
    for rpc in ("CreateJob", "GetJob", "ListJobs", "PauseJob", "PreviewSchedule", "RedriveRun"):
        assert f"rpc {rpc}" in described
    health = json.loads(await grpcurl(api.address, "grpc.health.v1.Health/Check"))
    assert health["status"] == "SERVING"

    job = {
        "displayName": "nightly invoices",
        "schedule": {"cron": {"expression": "0 2 * * *", "timeZone": "Asia/Kolkata"}},
        "target": {
            "http": {
                "url": "https://billing.internal/run-invoices",
                "headers": {"Authorization": "Bearer t0ps3cret"},
            }
        },
        "retryPolicy": {"maxAttempts": 5, "initialBackoff": "2s"},
    }
    created = json.loads(
        await grpcurl(
            api.address,
            "duetime.jobs.v1.JobService/CreateJob",
            token=token,
            data={"job": job, "requestId": "cli-1"},
        )
    )["job"]
    assert created["state"] == "JOB_STATE_ACTIVE"
    assert created["next_run_time"].endswith("T20:30:00Z")  # 02:00 in Kolkata
    assert created["target"]["http"]["headers"]["Authorization"] == "[REDACTED]"
    assert "t0ps3cret" not in json.dumps(created)

    got = json.loads(
        await grpcurl(
            api.address,
            "duetime.jobs.v1.JobService/GetJob",
            token=token,
            data={"name": created["name"]},
        )
    )
    assert got["job"]["job_id"] == created["job_id"]
    listed = json.loads(
        await grpcurl(api.address, "duetime.jobs.v1.JobService/ListJobs", token=token, data={})
    )
    assert [j["job_id"] for j in listed["jobs"]] == [created["job_id"]]
    paused = json.loads(
        await grpcurl(
            api.address,
            "duetime.jobs.v1.JobService/PauseJob",
            token=token,
            data={"name": created["name"]},
        )
    )
    assert paused["job"]["state"] == "JOB_STATE_PAUSED"
    preview = json.loads(
        await grpcurl(
            api.address,
            "duetime.jobs.v1.JobService/PreviewSchedule",
            token=token,
            data={"job": created["name"], "count": 3, "startTime": "2026-12-01T00:00:00Z"},
        )
    )
    assert [o["nominal_time"] for o in preview["occurrences"]] == [
        "2026-12-01T20:30:00Z",
        "2026-12-02T20:30:00Z",
        "2026-12-03T20:30:00Z",
    ]
    assert preview["occurrences"][0]["local_time"] == "2026-12-02T02:00:00+05:30"

    # Errors are readable from the command line too: the bad field is named.
    process = await asyncio.create_subprocess_exec(
        tool("grpcurl"),
        *grpcurl_tls_args(),
        "-H",
        f"authorization: Bearer {token}",
        "-d",
        json.dumps(
            {"job": {**job, "schedule": {"cron": {"expression": "0 25 * * *", "timeZone": "UTC"}}}}
        ),
        "-format-error",
        api.address,
        "duetime.jobs.v1.JobService/CreateJob",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode != 0
    error = json.loads((out or err).decode())
    assert error["code"] == 3  # INVALID_ARGUMENT
    bad = next(d for d in error["details"] if d["@type"].endswith("BadRequest"))
    violations = bad["field_violations"]
    assert [v["field"] for v in violations] == ["job.schedule.cron.expression"]


# The worker is not here: it has no database access at all (it talks to the scheduler).
@pytest.mark.parametrize("module", ["duetime_api", "duetime_scheduler", "duetime_relay"])
async def test_services_refuse_an_unmigrated_database(module: str) -> None:
    name = f"duetime_e_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name)
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            module,
            env={**os.environ, "DUETIME_PG_DSN": dsn, "DUETIME_API_ADDRESS": "127.0.0.1:0"},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(process.communicate(), timeout=60)
        assert process.returncode != 0
        assert b"schema version 0 is older than this build needs" in out
    finally:
        await drop_database(name)


async def test_an_operator_manages_teams_and_quotas_with_grpcurl(
    api_process: tuple[Service, str], db_dsn: str
) -> None:
    api, team_token = api_process
    conn = await asyncpg.connect(db_dsn)
    try:
        operator = await create_operator_token(conn)
    finally:
        await conn.close()
    described = await grpcurl(api.address, "describe", "duetime.admin.v1.AdminService")
    for rpc in ("CreateTeam", "UpdateTeamQuota", "CreateToken", "RevokeToken"):
        assert f"rpc {rpc}" in described
    admin = "duetime.admin.v1.AdminService"
    team = json.loads(
        await grpcurl(
            api.address, f"{admin}/CreateTeam", token=operator, data={"team": {"teamId": "search"}}
        )
    )["team"]
    assert team["name"] == "teams/search"
    secret = json.loads(
        await grpcurl(
            api.address,
            f"{admin}/CreateToken",
            token=operator,
            data={"token": {"role": "TOKEN_ROLE_TEAM", "teamId": "search"}},
        )
    )["secret"]
    updated = json.loads(
        await grpcurl(
            api.address,
            f"{admin}/UpdateTeamQuota",
            token=operator,
            data={
                "name": "teams/search",
                "quota": {"runsPerMinute": 600, "rateBurst": 10, "maxPriority": "PRIORITY_HIGH"},
                "updateMask": {"paths": ["runs_per_minute", "rate_burst", "max_priority"]},
            },
        )
    )["team"]
    # grpcurl prints the proto field names.
    assert updated["quota"]["runs_per_minute"] == "600"
    assert updated["quota_overrides"]["max_priority"] == "PRIORITY_HIGH"
    quota = json.loads(
        await grpcurl(api.address, "duetime.jobs.v1.JobService/GetTeamQuota", token=secret)
    )
    assert quota["quota"]["rate_burst"] == "10"
    with pytest.raises(AssertionError, match="PermissionDenied"):
        await grpcurl(api.address, f"{admin}/ListTeams", token=team_token)
