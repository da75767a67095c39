"""An operator (and a team) with the ``duetime`` command against the API process: teams, their
tokens and quotas, a team at its quota (the exit code and the quota, limit and usage in the
message), held runs with their limit, ``duetime quota``, revoking, and refusals by role."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from duetime.admin.v1 import admin_service_pb2, admin_service_pb2_grpc
from duetime.jobs.v1 import job_service_pb2, job_service_pb2_grpc
from testkit.cli import Cli, api_on_own_database, operator_token
from testkit.tls import service_channel

pytestmark = pytest.mark.timeout(120)

JOB_YAML = """\
displayName: on demand
schedule:
  at:
    runTime: "2099-01-01T00:00:00Z"  # never due: runs come from triggers
target:
  http:
    url: https://reports.internal/build
"""


@pytest.fixture(scope="module")
async def api(template_db: str) -> AsyncIterator[tuple[str, str]]:
    async with api_on_own_database(template_db) as running:
        yield running


@pytest.fixture
async def operator(api: tuple[str, str]) -> Cli:
    """``duetime`` for an operator: DUETIME_OPERATOR_TOKEN set, and no team token."""
    address, dsn = api
    return Cli(address, "", "", operator_token=await operator_token(dsn))


async def new_team(operator: Cli) -> tuple[str, Cli]:
    """A team made with ``admin teams create`` and a token made with ``admin tokens create``;
    ``duetime`` for that team (with the operator's token beside its own, as a person with
    both set)."""
    team = f"team-{uuid.uuid4().hex[:8]}"
    await operator.ok("admin", "teams", "create", team)
    created = await operator.ok("admin", "tokens", "create", "--role", "team", "--team", team)
    # The secret alone is on stdout, for TOKEN=$(...); the token and the warning on stderr.
    (secret,) = created.stdout.splitlines()
    assert secret.startswith("dtt_"), created
    assert f"Team         {team}" in created.stderr
    assert "shown this once only" in created.stderr
    return team, Cli(operator.api, secret, team, operator.operator_token)


async def answer(cli: Cli, rpc: str, request: Message, *, admin: bool = False) -> dict[str, Any]:
    """What the API itself answers, in proto3 JSON: what ``-o json`` must print."""
    async with service_channel(cli.api) as channel:
        stub: Any = (
            admin_service_pb2_grpc.AdminServiceStub(channel)
            if admin
            else job_service_pb2_grpc.JobServiceStub(channel)
        )
        token = cli.operator_token if admin else cli.token
        response = await getattr(stub, rpc)(
            request, metadata=(("authorization", f"Bearer {token}"),)
        )
    return json_format.MessageToDict(response)


def steady(data: dict[str, Any]) -> dict[str, Any]:
    """An answer without the usage's ``rateEligibleTime``, which is "now" (the time of the
    call) while the rate lets dispatches through."""
    for usage in (data.get("usage"), data.get("team", {}).get("usage")):
        if usage is not None:
            usage.pop("rateEligibleTime")
    return data


def limits(rows: list[dict[str, str]]) -> dict[str, tuple[str, ...]]:
    """A quota table's rows by limit: (in force[, set by][, usage])."""
    return {row["LIMIT"]: tuple(v for k, v in row.items() if k != "LIMIT") for row in rows}


async def test_a_team_at_its_stored_jobs_quota(operator: Cli, tmp_path: Path) -> None:
    team, cli = await new_team(operator)
    job = tmp_path / "job.yaml"
    job.write_text(JOB_YAML)
    high = tmp_path / "high.yaml"
    high.write_text(JOB_YAML + "priority: PRIORITY_HIGH\n")

    set_quota = await operator.ok("admin", "quotas", "set", team, "max_stored_jobs=1", "weight=3")
    assert set_quota.detail()["Team"] == f"teams/{team}"
    assert limits(set_quota.table("LIMIT")) == {
        "max_stored_jobs": ("1", "team", "0 stored"),
        "runs_per_minute": ("60000", "default", "-"),
        "rate_burst": ("20000", "default", "20000 free now"),
        "max_running": ("20000", "default", "0 in flight"),
        "max_priority": ("NORMAL", "default", "-"),
        "weight": ("3", "team", "-"),
    }

    # A priority the team was not granted: refused, naming the quota and its limit (exit 7,
    # PERMISSION_DENIED's); then the stored-jobs quota (exit 8, RESOURCE_EXHAUSTED's).
    denied = await cli("jobs", "create", "-f", str(high))
    assert denied.code == 7, denied
    assert denied.stderr.splitlines() == [
        "Error: PERMISSION_DENIED (PRIORITY_NOT_GRANTED): priority HIGH is above the team's "
        "highest, NORMAL; an operator can grant it",
        "  quota max_priority: limit NORMAL, usage HIGH",
    ]
    await cli.ok("jobs", "create", "-f", str(job))
    full, full_json = await asyncio.gather(
        cli("jobs", "create", "-f", str(job)), cli("jobs", "create", "-f", str(job), "-o", "json")
    )
    assert full.code == 8, full
    assert full.stderr.splitlines() == [
        "Error: RESOURCE_EXHAUSTED (STORED_JOBS_QUOTA): the team may store 1 active or paused "
        "jobs and has 1",
        "  quota max_stored_jobs: limit 1, usage 1",
    ]
    assert full_json.code == 8
    assert full_json.error()["quotaViolations"] == [
        {
            "quota": "max_stored_jobs",
            "limit": "1",
            "usage": "1",
            "description": "the team may store 1 active or paused jobs and has 1",
        }
    ]

    # The team reads its own quota and usage; the operator sees which limits are the team's.
    mine, mine_json, seen, listed = await asyncio.gather(
        cli.ok("quota"),
        cli.ok("quota", "-o", "json"),
        operator.ok("admin", "quotas", "get", team, "-o", "json"),
        operator.ok("admin", "teams", "list"),
    )
    assert mine.detail() == {
        "Team": f"teams/{team}",
        "Held runs": "0 WAITING (QUOTA or FAIR_SHARE)",
    }
    assert limits(mine.table("LIMIT"))["max_stored_jobs"] == ("1", "1 stored")
    request = job_service_pb2.GetTeamQuotaRequest()
    assert steady(mine_json.json()) == steady(await answer(cli, "GetTeamQuota", request))
    assert seen.json()["team"]["quotaOverrides"] == {"maxStoredJobs": "1", "weight": 3}
    assert seen.json()["team"]["usage"]["storedJobs"] == "1"
    (row,) = [r for r in listed.table("TEAM ID") if r["TEAM ID"] == team]
    assert (row["STORED JOBS"], row["OWN LIMITS"]) == ("1", "max_stored_jobs=1, weight=3")

    # Given back to the default, the limit no longer binds; HIGH once granted.
    reset = await operator.ok("admin", "quotas", "reset", team, "max_stored_jobs")
    assert limits(reset.table("LIMIT"))["max_stored_jobs"] == ("100000", "default", "1 stored")
    await operator.ok("admin", "quotas", "set", team, "max_priority=high")
    created = await cli.ok("jobs", "create", "-f", str(high), "-o", "json")
    assert created.json()["job"]["priority"] == "PRIORITY_HIGH"


async def test_held_runs_show_the_limit_that_holds_them(operator: Cli, tmp_path: Path) -> None:
    team, cli = await new_team(operator)
    await operator.ok("admin", "quotas", "set", team, "runs_per_minute=1", "rate_burst=1")
    (tmp_path / "job.yaml").write_text(JOB_YAML)
    job_id = (
        await cli.ok("jobs", "create", "-f", str(tmp_path / "job.yaml"), "-o", "json")
    ).json()["job"]["jobId"]
    # The first trigger takes the one dispatch the rate allows; the second is held for it.
    first = (await cli.ok("jobs", "trigger", job_id)).detail()
    held = (await cli.ok("jobs", "trigger", job_id)).detail()
    assert first["State"] == "QUEUED"
    assert (held["State"], held["Quota limit"]) == ("WAITING", "runs_per_minute")
    assert held["Reason"] == "QUOTA: held back by the team's rate limit (runs_per_minute)"
    assert held["Eligible time"] == "not yet: held by runs_per_minute"

    listed, usage = await asyncio.gather(cli.ok("runs", "list", job_id), cli.ok("quota"))
    runs = listed.table("RUN ID")
    assert [(r["STATE"], r["REASON"]) for r in runs] == [
        ("WAITING", "QUOTA: runs_per_minute"),
        ("QUEUED", "-"),
    ]
    assert usage.detail()["Held runs"] == "1 WAITING (QUOTA or FAIR_SHARE)"
    rate = limits(usage.table("LIMIT"))
    assert rate["rate_burst"] == ("1", "0 free now")
    assert rate["runs_per_minute"][0] == "1"
    assert rate["runs_per_minute"][1].startswith("next at ")
    assert rate["max_running"] == ("20000", "1 in flight")


async def test_tokens_are_listed_and_revoked(operator: Cli) -> None:
    team, cli = await new_team(operator)
    spare = await operator(
        "admin", "tokens", "create", "--role", "team", "--team", team, "--description", "ci"
    )
    assert spare.code == 0, spare
    spare_token = spare.stdout.strip()
    scripted = await operator.ok("admin", "tokens", "create", "--role", "worker", "-o", "json")
    assert scripted.json()["token"]["role"] == "TOKEN_ROLE_WORKER"
    assert scripted.json()["secret"]

    listed = (await operator.ok("admin", "tokens", "list", "--team", team)).table("TOKEN ID")
    assert [(t["ROLE"], t["TEAM"], t["DESCRIPTION"]) for t in listed] == [
        ("TEAM", team, "ci"),
        ("TEAM", team, "-"),
    ]
    spare_id = listed[0]["TOKEN ID"]

    # Revoked before its first use (services cache a token they have seen for up to 10 s).
    revoked = await operator.ok("admin", "tokens", "revoke", spare_id)
    assert revoked.detail()["Name"] == f"tokens/{spare_id}"
    assert revoked.detail()["State"] == "REVOKED"
    refused, valid, everything = await asyncio.gather(
        Cli(cli.api, spare_token, team)("jobs", "list"),
        operator.ok("admin", "tokens", "list", "--team", team, "-o", "json"),
        operator.ok("admin", "tokens", "list", "--team", team, "--include-revoked"),
    )
    assert refused.code == 7, refused
    assert refused.stderr == "Error: UNAUTHENTICATED (INVALID_TOKEN): unknown or revoked token\n"
    assert [t["tokenId"] for t in valid.json()["tokens"]] == [listed[1]["TOKEN ID"]]
    shown = {t["TOKEN ID"]: t["REVOKED (UTC)"] for t in everything.table("TOKEN ID")}
    assert shown[spare_id] == revoked.detail()["Revoked"] != "-"
    assert shown[listed[1]["TOKEN ID"]] == "-"

    # By its full name too; an unknown one is NOT_FOUND.
    worker_id = scripted.json()["token"]["tokenId"]
    by_name, unknown = await asyncio.gather(
        operator.ok("admin", "tokens", "revoke", f"tokens/{worker_id}", "-o", "json"),
        operator("admin", "tokens", "revoke", str(uuid.uuid4())),
    )
    assert by_name.json()["token"]["revokeTime"]
    assert unknown.code == 4, unknown
    assert unknown.stderr.startswith("Error: NOT_FOUND (TOKEN_NOT_FOUND): ")


async def test_operator_commands_refuse_other_tokens_and_bad_input(operator: Cli) -> None:
    team, cli = await new_team(operator)
    team_only = Cli(cli.api, cli.token, team)  # no operator token: DUETIME_TOKEN is sent
    (
        as_team, as_team_json, as_operator, nobody, bad_id, bad_name, bad_value, out_of_range,
    ) = await asyncio.gather(
        team_only("admin", "teams", "list"),
        team_only("admin", "quotas", "get", team, "-o", "json"),
        Cli(cli.api, operator.operator_token, "")("jobs", "list"),
        Cli(cli.api, "", "")("admin", "teams", "list"),
        operator("admin", "teams", "create", "Not_A_Team"),
        operator("admin", "quotas", "set", team, "max_jobs=3"),
        operator("admin", "quotas", "set", team, "max_running=lots"),
        operator("admin", "quotas", "set", team, "weight=0", "-o", "json"),
    )  # fmt: skip
    assert as_team.code == 7, as_team
    assert as_team.stderr == (
        "Error: PERMISSION_DENIED (WRONG_TOKEN_ROLE): this token may not call "
        "duetime.admin.v1.AdminService (no operator token was given, so the team token was "
        "sent: pass --operator-token or set DUETIME_OPERATOR_TOKEN)\n"
    )
    assert as_team_json.code == 7
    assert as_team_json.error()["code"] == "PERMISSION_DENIED"
    assert as_operator.code == 7, as_operator
    assert "(WRONG_TOKEN_ROLE)" in as_operator.stderr
    assert (nobody.code, nobody.stderr) == (
        7,
        "Error: UNAUTHENTICATED: no operator token: pass --operator-token or set "
        "DUETIME_OPERATOR_TOKEN\n",
    )
    assert bad_id.code == 3, bad_id
    assert bad_id.stderr.splitlines()[1].startswith("  team.team_id: 2 to 63 characters")
    assert bad_name.code == 2, bad_name
    assert "Invalid value for 'max_jobs': not a limit; the limits are max_stored_jobs," in (
        bad_name.stderr
    )
    assert bad_value.code == 2, bad_value
    assert "'max_running=lots': max_running is a whole number" in bad_value.stderr
    assert out_of_range.code == 3, out_of_range
    assert out_of_range.error()["fieldViolations"] == [
        {"field": "quota.weight", "description": "must be from 1 to 1000"}
    ]


async def test_teams_and_the_platform_defaults(operator: Cli) -> None:
    team = f"team-{uuid.uuid4().hex[:8]}"
    created = await operator.ok(
        "admin", "teams", "create", team, "--display-name", "[search] team",
        "--notification-url", "https://hooks.internal/dead",
    )  # fmt: skip
    assert created.detail()["Display name"] == "[search] team"
    assert created.detail()["Notification URL"] == "https://hooks.internal/dead"
    taken, updated = await asyncio.gather(
        operator("admin", "teams", "create", team),
        operator.ok("admin", "teams", "update", f"teams/{team}", "--notification-url", ""),
    )
    assert taken.code == 5, taken
    assert updated.detail()["Notification URL"] == "-"
    assert updated.detail()["Display name"] == "[search] team"
    got = await operator.ok("admin", "teams", "get", team, "-o", "json")
    request = admin_service_pb2.GetTeamRequest(name=f"teams/{team}")
    assert steady(got.json()) == steady(await answer(operator, "GetTeam", request, admin=True))

    shown = await operator.ok("admin", "quotas", "defaults")
    defaults = limits(shown.table("LIMIT"))
    assert defaults["max_running"] == ("20000",)
    changed = await operator.ok("admin", "quotas", "defaults", "set", "max_running=0", "-o", "json")
    try:
        assert "maxRunning" not in changed.json()["quota"]  # 0: no limit, proto3 JSON omits it
        quota = limits((await operator.ok("admin", "quotas", "get", team)).table("LIMIT"))
        assert quota["max_running"] == ("no limit", "default", "0 in flight")
        refused = await operator("admin", "quotas", "defaults", "set", "max_running=default")
        assert refused.code == 2, refused  # the defaults have no default of their own
    finally:
        await operator.ok("admin", "quotas", "defaults", "set", "max_running=20000")


async def test_a_teams_signing_keys_are_rotated(operator: Cli) -> None:
    team, _ = await new_team(operator)
    added = await operator.ok("admin", "signing-keys", "add", team)
    (secret,) = added.stdout.splitlines()
    assert secret.startswith("whsec_")
    assert "shown this once only" in added.stderr
    new = (await operator.ok("admin", "signing-keys", "add", team, "-o", "json")).json()
    full = await operator("admin", "signing-keys", "add", team)
    assert full.code != 0
    assert "SIGNING_KEYS_FULL" in full.stderr
    listed = (await operator.ok("admin", "signing-keys", "list", team)).table("KEY ID")
    assert [row["STATE"] for row in listed] == ["ACTIVE", "ACTIVE"]
    old_id = listed[0]["KEY ID"]
    assert listed[1]["KEY ID"] == new["signingKey"]["keyId"]
    assert secret not in str(listed)
    retired = await operator.ok("admin", "signing-keys", "retire", team, old_id, "-o", "json")
    assert retired.json()["signingKey"]["retireTime"]
    states = (await operator.ok("admin", "signing-keys", "list", team)).table("KEY ID")
    assert [row["STATE"] for row in states] == ["RETIRED", "ACTIVE"]
    updated = await operator.ok("admin", "teams", "update", team, "--default-signing", "webhook")
    assert "Call signing      WEBHOOK" in updated.stdout
    # A key that leaked is revoked at once, retired or not: it is no longer listed.
    await operator.ok("admin", "signing-keys", "revoke", team, old_id)
    listed = (await operator.ok("admin", "signing-keys", "list", team)).table("KEY ID")
    assert [row["KEY ID"] for row in listed] == [new["signingKey"]["keyId"]]
    again = await operator("admin", "signing-keys", "revoke", team, old_id)
    assert again.code != 0
    assert "SIGNING_KEY_NOT_FOUND" in again.stderr
