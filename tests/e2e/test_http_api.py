"""The HTTP/JSON API through the gateway (Envoy's gRPC-JSON transcoder in front of the api),
against the live system: every method of JobService and AdminService as curl would call it,
the design's short forms where the team comes from the token, errors as JSON google.rpc.Status
with their details under Google's HTTP status for each code, HTTPS only, gRPC-web, and the
OpenAPI document, served and in step with proto/ (docs/http.md)."""

from __future__ import annotations

import struct
import subprocess
import uuid
from typing import Any

import aiohttp
import pytest

from duetime.jobs.v1 import job_service_pb2
from testkit.gateway import OPENAPI_FILE, HttpApi
from testkit.http_target import Behaviour
from testkit.live import Live
from testkit.polling import eventually
from testkit.processes import REPO
from testkit.system import TEAM

pytestmark = pytest.mark.timeout(120)


def job_body(url: str, name: str = "nightly", max_attempts: int = 3) -> dict[str, Any]:
    return {
        "displayName": name,
        "schedule": {"cron": {"expression": "30 2 * * *", "timeZone": "America/New_York"}},
        "target": {"http": {"url": url}},
        "retryPolicy": {"maxAttempts": max_attempts, "initialBackoff": "0.1s"},
    }


async def test_every_job_method_over_http(live: Live) -> None:
    api, team = live.api, f"teams/{TEAM}"
    url = live.target.on("/http-every", Behaviour())
    job = (
        await api.ok(
            "POST", f"/v1/{team}/jobs", job_body(url), params={"requestId": uuid.uuid4().hex}
        )
    )["job"]
    name = job["name"]
    assert name == f"{team}/jobs/{job['jobId']}"
    assert job["state"] == "JOB_STATE_ACTIVE"
    assert (await api.ok("GET", f"/v1/{name}"))["job"] == job
    listed = await api.ok("GET", f"/v1/{team}/jobs", params={"state": "JOB_STATE_ACTIVE"})
    assert name in [j["name"] for j in listed["jobs"]]

    updated = await api.ok(
        "PATCH",
        f"/v1/{name}",
        {"displayName": "renamed", "etag": job["etag"]},
        params={"updateMask": "displayName"},
    )
    assert updated["job"]["displayName"] == "renamed"
    paused = await api.ok("POST", f"/v1/{name}:pause", {"note": "over http"})
    assert paused["job"]["state"] == "JOB_STATE_PAUSED"
    assert paused["job"]["pause"]["note"] == "over http"
    resumed = await api.ok("POST", f"/v1/{name}:resume", {"etag": paused["job"]["etag"]})
    assert resumed["job"]["state"] == "JOB_STATE_ACTIVE"

    run = (await api.ok("POST", f"/v1/{name}:trigger", {"requestId": uuid.uuid4().hex}))["run"]
    assert run["state"] == "RUN_STATE_QUEUED"

    async def succeeded() -> bool:
        got = (await api.ok("GET", f"/v1/{run['name']}"))["run"]
        return bool(got["state"] == "RUN_STATE_SUCCEEDED")

    await eventually(succeeded, 30, "the triggered run succeeded")
    runs = await api.ok("GET", f"/v1/{name}/runs", params={"pageSize": "10"})
    assert [r["name"] for r in runs["runs"]] == [run["name"]]

    preview = await api.ok(
        "POST",
        "/v1/jobs:previewSchedule",
        {"job": name, "startTime": "2026-03-06T12:00:00Z", "count": 3},
    )
    # The spring-forward night: 02:30 does not exist in New York on 2026-03-08.
    assert [o.get("dstAdjustment") for o in preview["occurrences"]] == [
        None,
        "DST_ADJUSTMENT_SHIFTED",
        None,
    ]
    # Why: a wall-clock time (02:30 did not exist that night) or an instant, in the query.
    why = await api.ok("GET", f"/v1/{name}:explain", params={"localTime": "2026-03-08T02:30"})
    assert why["time"] == "2026-03-08T07:00:00Z"
    assert why["dstTransition"]["kind"] == "DST_TRANSITION_KIND_GAP"
    assert why["fate"] == "OCCURRENCE_FATE_UNRECORDED"  # before the job was created
    at = await api.ok("GET", f"/v1/{name}:explain", params={"time": "2026-03-07T07:30:00Z"})
    assert at["occurrence"]["localTime"] == "2026-03-07T02:30:00-05:00"
    versions = await api.ok("GET", f"/v1/{name}/versions", params={"pageSize": "10"})
    assert [v["change"] for v in versions["versions"]] == [
        "JOB_CHANGE_RESUME",
        "JOB_CHANGE_PAUSE",
        "JOB_CHANGE_UPDATE",
        "JOB_CHANGE_CREATE",
    ]
    assert versions["versions"][2]["changedFields"] == ["display_name"]
    # Backfill, counted: 02:30 daily across the spring-forward night (shifted to 03:00 EDT).
    backfill = {"startTime": "2026-03-06T12:00:00Z", "endTime": "2026-03-10T12:00:00Z"}
    counted = await api.ok("POST", f"/v1/{name}:backfill", {**backfill, "validateOnly": True})
    assert (counted["occurrenceCount"], counted["runCount"]) == (4, 4)
    assert counted["firstOccurrenceTime"] == "2026-03-07T07:30:00Z"
    made = await api.ok("POST", f"/v1/{name}:backfill", {**backfill, "requestId": "http-1"})
    assert made["runCount"] == 4
    backfilled = await api.ok(
        "GET", f"/v1/{name}/runs", params={"filter": "origin=BACKFILL", "pageSize": "10"}
    )
    assert {r["origin"] for r in backfilled["runs"]} == {"RUN_ORIGIN_BACKFILL"}
    assert sorted(r["nominalTime"] for r in backfilled["runs"])[1] == "2026-03-08T07:00:00Z"
    quota = await api.ok("GET", f"/v1/{team}/quota")
    assert quota["name"] == team
    assert int(quota["usage"]["storedJobs"]) >= 1

    # The team's calendars (docs/calendars.md).
    days = {"calendarId": "http-days", "timeZone": "America/New_York", "dates": ["2026-03-09"]}
    calendar = (await api.ok("POST", f"/v1/{team}/calendars", days))["calendar"]
    assert calendar["name"] == f"{team}/calendars/http-days"
    assert (await api.ok("GET", f"/v1/{calendar['name']}"))["calendar"]["dates"] == ["2026-03-09"]
    calendars = (await api.ok("GET", f"/v1/{team}/calendars"))["calendars"]
    assert [c["calendarId"] for c in calendars] == ["http-days"]
    changed = {"timeZone": "UTC", "weekdays": ["CALENDAR_WEEKDAY_SUNDAY"], "etag": calendar["etag"]}
    patched = (await api.ok("PATCH", f"/v1/{calendar['name']}", changed))["calendar"]
    assert (patched["timeZone"], patched["weekdays"]) == ("UTC", ["CALENDAR_WEEKDAY_SUNDAY"])
    assert await api.ok("DELETE", f"/v1/{calendar['name']}") == {}

    assert await api.ok("DELETE", f"/v1/{name}") == {}
    gone = await api.call("GET", f"/v1/{name}")
    assert (gone.status, gone.reason) == (404, "JOB_NOT_FOUND")


async def test_a_dead_lettered_run_is_redriven_over_http(live: Live) -> None:
    api = live.api
    url = live.target.on("/http-failing", Behaviour(status=500))
    name = (await api.ok("POST", "/v1/jobs", job_body(url, "failing", max_attempts=1)))["job"][
        "name"
    ]
    run = (await api.ok("POST", f"/v1/{name}:trigger", {"requestId": uuid.uuid4().hex}))["run"]

    async def dead_lettered() -> bool:
        got = (await api.ok("GET", f"/v1/{run['name']}"))["run"]
        return bool(got["state"] == "RUN_STATE_DEAD_LETTERED")

    await eventually(dead_lettered, 30, "the run was dead-lettered")
    redriven = await api.ok("POST", f"/v1/{run['name']}:redrive", {"requestId": uuid.uuid4().hex})
    assert redriven["run"]["state"] == "RUN_STATE_QUEUED"
    assert redriven["run"]["name"] == run["name"]


async def test_every_admin_method_over_http(live: Live) -> None:
    admin = HttpApi(live.api.session, live.api.base_url, live.operator_token)
    team_id = f"team-http-{uuid.uuid4().hex[:6]}"
    created = await admin.ok("POST", "/v1/admin/teams", {"teamId": team_id, "displayName": "B"})
    team = created["team"]["name"]
    assert team == f"teams/{team_id}"
    assert (await admin.ok("GET", f"/v1/admin/{team}"))["team"]["displayName"] == "B"
    listed = await admin.ok("GET", "/v1/admin/teams", params={"pageSize": "1000"})
    assert team in [t["name"] for t in listed["teams"]]
    renamed = await admin.ok(
        "PATCH",
        f"/v1/admin/{team}",
        {"displayName": "Team B"},
        params={"updateMask": "displayName"},
    )
    assert renamed["team"]["displayName"] == "Team B"
    limited = await admin.ok(
        "PATCH",
        f"/v1/admin/{team}/quota",
        {"maxStoredJobs": "1"},
        params={"updateMask": "maxStoredJobs"},
    )
    assert limited["team"]["quota"]["maxStoredJobs"] == "1"
    defaults = (await admin.ok("GET", "/v1/admin/quotaDefaults"))["quota"]
    changed = await admin.ok(
        "PATCH",
        "/v1/admin/quotaDefaults",
        {"weight": defaults["weight"]},
        params={"updateMask": "weight"},
    )
    assert changed["quota"] == defaults

    made = await admin.ok(
        "POST", "/v1/admin/tokens", {"role": "TOKEN_ROLE_TEAM", "teamId": team_id}
    )
    token = made["token"]
    tokens = await admin.ok("GET", "/v1/admin/tokens", params={"teamId": team_id})
    assert [t["name"] for t in tokens["tokens"]] == [token["name"]]

    # The new team's token works over HTTP, within the quota just set: a second stored job is
    # RESOURCE_EXHAUSTED, 429, with the quota named in a QuotaFailure.
    other = HttpApi(live.api.session, live.api.base_url, made["secret"])
    url = live.target.on("/http-admin", Behaviour())
    await other.ok("POST", "/v1/jobs", job_body(url))
    over = await other.call("POST", "/v1/jobs", job_body(url))
    assert (over.status, over.body["code"]) == (429, 8)
    violations = over.detail("QuotaFailure")["violations"]
    assert [v["quotaId"] for v in violations] == ["max_stored_jobs"]
    # An operator token is not a team's, nor a team's an operator's: 403.
    denied = await other.call("GET", "/v1/admin/teams")
    assert (denied.status, denied.body["code"]) == (403, 7)

    revoked = await admin.ok("POST", f"/v1/admin/{token['name']}:revoke", {})
    assert "revokeTime" in revoked["token"]


async def test_errors_are_json_statuses_with_their_details(live: Live) -> None:
    api = live.api
    url = live.target.on("/http-errors", Behaviour())
    bad = job_body(url)
    bad["schedule"]["cron"]["timeZone"] = "Mars/Olympus"
    refused = await api.call("POST", "/v1/jobs", bad)
    assert (refused.status, refused.body["code"], refused.reason) == (400, 3, "INVALID_ARGUMENT")
    fields = [v["field"] for v in refused.detail("BadRequest")["fieldViolations"]]
    assert fields == ["job.schedule.cron.time_zone"]

    job = (await api.ok("POST", "/v1/jobs", job_body(url)))["job"]
    # Another team's name for it, or none of this team's: NOT_FOUND, 404.
    elsewhere = await api.call("GET", f"/v1/teams/team-other/jobs/{job['jobId']}")
    assert (elsewhere.status, elsewhere.reason) == (404, "JOB_NOT_FOUND")
    not_mine = await api.call("POST", "/v1/teams/team-other/jobs", job_body(url))
    assert (not_mine.status, not_mine.reason) == (404, "TEAM_NOT_FOUND")

    await api.ok("POST", f"/v1/{job['name']}:pause", {})
    stale = await api.call("POST", f"/v1/{job['name']}:resume", {"etag": job["etag"]})
    assert (stale.status, stale.body["code"], stale.reason) == (409, 10, "ETAG_MISMATCH")
    assert stale.detail("ErrorInfo")["domain"] == "duetime.dev"
    again = await api.call("POST", f"/v1/{job['name']}:pause", {})
    assert (again.status, again.body["code"], again.reason) == (400, 9, "JOB_NOT_ACTIVE")

    for token in ("", "not-a-token"):
        anonymous = await api.call("GET", f"/v1/{job['name']}", token=token)
        assert (anonymous.status, anonymous.body["code"]) == (401, 16)
    assert anonymous.reason == "INVALID_TOKEN"

    # What the gateway itself refuses, as JSON statuses too: a query parameter that is no
    # field, a body that is no JSON, a path that is no method.
    unknown = await api.call("GET", f"/v1/jobs/{job['jobId']}/runs", params={"limit": "20"})
    assert (unknown.status, unknown.body["code"]) == (400, 3)
    assert '"limit"' in unknown.body["message"]
    async with api.session.post(f"{api.base_url}/v1/jobs", data="{not json") as response:
        assert response.status == 400
        assert (await response.json())["code"] == 3
    nowhere = await api.call("GET", "/v1/nothing/here")
    assert (nowhere.status, nowhere.body["code"]) == (404, 5)


async def test_short_forms_take_the_team_from_the_token(live: Live) -> None:
    api = live.api
    url = live.target.on("/http-short", Behaviour())
    job = (await api.ok("POST", "/v1/jobs", job_body(url, "short")))["job"]
    job_id = job["jobId"]
    assert job["name"] == f"teams/{TEAM}/jobs/{job_id}"
    assert (await api.ok("GET", f"/v1/jobs/{job_id}"))["job"] == job
    paused = await api.ok("POST", f"/v1/jobs/{job_id}/pause")
    assert paused["job"]["state"] == "JOB_STATE_PAUSED"
    listed = await api.ok("GET", "/v1/jobs", params={"state": "JOB_STATE_PAUSED"})
    assert job["name"] in [j["name"] for j in listed["jobs"]]
    resumed = await api.ok("POST", f"/v1/jobs/{job_id}/resume", {"etag": paused["job"]["etag"]})
    assert resumed["job"]["state"] == "JOB_STATE_ACTIVE"
    assert await api.ok("GET", f"/v1/jobs/{job_id}/runs", params={"pageSize": "20"}) == {}
    assert (await api.ok("GET", "/v1/quota"))["name"] == f"teams/{TEAM}"
    # A name and a job id at once: which one is meant is not guessed.
    both = await api.call("POST", f"/v1/jobs/{job_id}/pause", {"name": job["name"]})
    assert both.status == 400
    assert [v["field"] for v in both.detail("BadRequest")["fieldViolations"]] == ["job_id"]
    assert await api.ok("DELETE", f"/v1/jobs/{job_id}") == {}
    gone = await api.call("GET", f"/v1/jobs/{job_id}")
    assert (gone.status, gone.reason) == (404, "JOB_NOT_FOUND")


async def test_only_https_is_served(live: Live) -> None:
    async with aiohttp.ClientSession() as plain:
        with pytest.raises(aiohttp.ClientError):
            await plain.get(f"http://{live.gateway.address}/healthz")
        # Nor HTTPS by a client that does not trust the services' CA.
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await plain.get(f"https://{live.gateway.address}/healthz")
    assert (await live.api.call("GET", "/healthz", token="")).status == 200


async def test_grpc_web_reaches_the_api(live: Live) -> None:
    api = live.api
    url = live.target.on("/http-grpc-web", Behaviour())
    job = (await api.ok("POST", "/v1/jobs", job_body(url, "web")))["job"]
    message = job_service_pb2.GetJobRequest(name=job["name"]).SerializeToString()
    async with api.session.post(
        f"{api.base_url}/duetime.jobs.v1.JobService/GetJob",
        data=struct.pack(">BI", 0, len(message)) + message,
        headers={
            "Content-Type": "application/grpc-web+proto",
            "X-Grpc-Web": "1",
            "Authorization": f"Bearer {api.token}",
        },
    ) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "application/grpc-web+proto"
        frames = await response.read()
    # A data frame (the response message), then a trailers frame (0x80) with grpc-status.
    flag, length = struct.unpack(">BI", frames[:5])
    assert flag == 0
    answer = job_service_pb2.GetJobResponse.FromString(frames[5 : 5 + length])
    assert answer.job.name == job["name"]
    trailers = frames[5 + length :]
    assert trailers[0] == 0x80
    assert b"grpc-status:0" in trailers[5:].replace(b" ", b"")


async def test_the_openapi_document_is_served(live: Live) -> None:
    document = await live.api.call("GET", "/v1/openapi.yaml", token="")
    assert document.status == 200
    assert document.headers["Content-Type"] == "application/yaml"
    assert document.body == OPENAPI_FILE.read_text()


def test_the_openapi_document_is_what_proto_gives() -> None:
    """openapi/ is generated from proto/ by scripts/gen with protoc-gen-openapiv2, a Go program
    that scripts/check does not need; its drift is caught here."""
    checked = subprocess.run(
        [str(REPO / "scripts" / "gen"), "--check", "openapi"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
