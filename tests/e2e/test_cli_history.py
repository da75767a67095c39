"""``duetime`` asking about a job's past and its changes against the API process: a pause's
note in ``jobs get`` and ``list``, ``jobs history``, ``duetime why`` across New York's
spring-forward night and in a paused stretch, and changes told before they are made
(``jobs update --dry-run``, ``jobs resume --dry-run`` and ``--catch-up``). The database clock
is put where each story needs it (every "now" of the API is ``duetime_now()``)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

import asyncpg
import pytest

from duetime.jobs.v1 import job_service_pb2
from testkit.cli import Cli, api_on_own_database, api_response, team_cli
from testkit.time_travel import utc

pytestmark = pytest.mark.timeout(120)

NIGHTLY = """\
displayName: nightly report
schedule:
  cron:
    expression: "30 2 * * *"
    timeZone: America/New_York
target:
  http:
    url: https://reports.internal/run
    headers:
      Authorization: Bearer s3cret
"""

EVERY_MINUTE = """\
displayName: ticker
schedule:
  cron:
    expression: "* * * * *"
    timeZone: UTC
target:
  http:
    url: https://ticks.internal/
misfire:
  policy: MISFIRE_POLICY_RUN_ALL
  maxCatchUpRuns: 3
"""


@pytest.fixture(scope="module")
async def api(template_db: str) -> AsyncIterator[tuple[str, str]]:
    async with api_on_own_database(template_db) as running:
        yield running


@pytest.fixture
async def cli(api: tuple[str, str]) -> Cli:
    address, dsn = api
    return await team_cli(dsn, address, f"team-{uuid.uuid4().hex[:8]}")


async def set_clock(api: tuple[str, str], at: datetime) -> None:
    conn = await asyncpg.connect(api[1])
    try:
        await conn.execute(
            """UPDATE duetime_clock SET "offset" = $1::timestamptz - statement_timestamp()""", at
        )
    finally:
        await conn.close()


async def create(cli: Cli, tmp_path: Path, text: str) -> str:
    path = tmp_path / f"{uuid.uuid4().hex}.yaml"
    path.write_text(text)
    created = await cli.ok("jobs", "create", "-f", str(path), "-o", "json")
    job_id: str = created.json()["job"]["jobId"]
    return job_id


async def test_why_on_the_spring_forward_night(
    cli: Cli, api: tuple[str, str], tmp_path: Path
) -> None:
    await set_clock(api, utc("2026-03-01T12:00"))
    job_id = await create(cli, tmp_path, NIGHTLY)
    answer = (await cli.ok("why", job_id, "2026-03-08T02:30")).detail()
    assert answer["Fate"] == "NOT_YET_DUE"
    assert answer["Why"].startswith("2026-03-08 02:30:00 did not exist: on 2026-03-08 in")
    assert (
        "Under the gap policy SHIFT the occurrence moved to 2026-03-08 03:00:00 EDT"
        in (answer["Why"])
    )
    assert answer["Asked"] == "2026-03-08 07:00:00Z"
    assert answer["Occurrence"].startswith("2026-03-08T03:00:00-04:00 (2026-03-08 07:00:00Z)")
    assert "shifted" in answer["Occurrence"]

    # No occurrence that day at 02:15 (nor any day): the nearest ones, on either side.
    none = (await cli.ok("why", job_id, "2026-03-07T02:15", "--tz", "America/New_York")).detail()
    assert none["Fate"] == "NOT_AN_OCCURRENCE"
    assert none["Before"].startswith("2026-03-06T02:30:00-05:00")
    assert none["After"].startswith("2026-03-07T02:30:00-05:00")

    # An instant, and -o json: exactly the API's answer.
    request = job_service_pb2.ExplainOccurrenceRequest(job=f"teams/{cli.team}/jobs/{job_id}")
    request.time.FromJsonString("2026-03-08T07:00:00Z")
    shown = await cli.ok("why", job_id, "2026-03-08T07:00:00Z", "-o", "json")
    assert shown.json() == await api_response(cli, "ExplainOccurrence", request)

    for args, code, text in (
        (("2026-03-08T07:00:00Z", "--tz", "UTC"), 2, "--tz goes with a wall-clock TIME"),
        (("08/03/2026",), 3, "local_time"),
        (("2026-03-08T02:30", "--tz", "Mars/Olympus"), 3, "time_zone"),
    ):
        bad = await cli("why", job_id, *args)
        assert bad.code == code, bad
        assert text in bad.stderr


async def test_a_pause_note_the_history_and_why_a_paused_occurrence_was_skipped(
    cli: Cli, api: tuple[str, str], tmp_path: Path
) -> None:
    await set_clock(api, utc("2026-06-01T12:00:30"))
    job_id = await create(cli, tmp_path, EVERY_MINUTE)
    paused = await cli.ok("jobs", "pause", job_id, "--note", "warehouse migration")
    assert paused.detail()["Paused"].endswith(': "warehouse migration"')
    assert paused.detail()["Paused"].startswith("by tokens/")
    assert (await cli.ok("jobs", "get", job_id)).detail()["Paused"] == paused.detail()["Paused"]
    listed = (await cli.ok("jobs", "list")).table("JOB ID")
    assert [row["PAUSE NOTE"] for row in listed] == ["warehouse migration"]

    await set_clock(api, utc("2026-06-01T13:00:30"))
    # Still paused: skipped, to be recorded at the resume.
    pending = (await cli.ok("why", job_id, "2026-06-01T12:30")).detail()
    assert pending["Fate"] == "SKIPPED"
    assert 'noting "warehouse migration"' in pending["Why"]

    # Told first, changing nothing; then with catch-up, told the misfire policy's part.
    told = await cli.ok("jobs", "resume", job_id, "--dry-run")
    assert "covered by the pause: 60, 2026-06-01 12:01:00Z to 2026-06-01 13:00:00Z" in (told.stdout)
    assert "recorded SKIPPED: 60" in told.stdout
    assert told.stdout.rstrip().endswith("Nothing changed (--dry-run).")
    catching_up = await cli.ok("jobs", "resume", job_id, "--dry-run", "--catch-up")
    assert "run late (catch-up): 3: 2026-06-01 12:57:00Z" in catching_up.stdout
    assert "run as on time: 1" in catching_up.stdout
    assert (await cli.ok("jobs", "get", job_id)).detail()["State"] == "PAUSED"

    resumed = await cli.ok("jobs", "resume", job_id)
    assert resumed.detail()["State"] == "ACTIVE"
    assert "Paused" not in resumed.detail()
    answer = (await cli.ok("why", job_id, "2026-06-01T12:30")).detail()
    assert answer["Fate"] == "SKIPPED"
    assert answer["Reason"].startswith("JOB_PAUSED")
    assert answer["Stands for"] == ("60 occurrences, 2026-06-01 12:01:00Z to 2026-06-01 13:00:00Z")

    history = await cli.ok("jobs", "history", job_id)
    rows = history.table("VERSION")
    assert [(r["VERSION"], r["CHANGE"], r["NOTE"]) for r in rows] == [
        ("3", "RESUME", "-"),
        ("2", "PAUSE", "warehouse migration"),
        ("1", "CREATE", "-"),
    ]
    assert all(r["BY"].startswith("tokens/") for r in rows)
    request = job_service_pb2.ListJobVersionsRequest(
        parent=f"teams/{cli.team}/jobs/{job_id}", page_size=1000
    )
    as_json = await cli.ok("jobs", "history", job_id, "-o", "json")
    assert as_json.json() == await api_response(cli, "ListJobVersions", request)
    many = await cli("jobs", "resume", job_id, job_id, "--catch-up")
    assert many.code == 2
    assert "--catch-up and --dry-run go with one JOB" in many.stderr


async def test_an_update_dry_run_shows_the_next_runs_before_and_after(
    cli: Cli, api: tuple[str, str], tmp_path: Path
) -> None:
    await set_clock(api, utc("2026-03-06T12:00"))
    job_id = await create(cli, tmp_path, NIGHTLY.replace("30 2", "0 3"))
    change = tmp_path / "earlier.yaml"
    change.write_text(NIGHTLY.split("target:")[0])
    told = await cli.ok("jobs", "update", job_id, "-f", str(change), "--dry-run", "--count", "3")
    assert "Nothing changed (--dry-run). The next runs now:" in told.stdout
    before, after = told.stdout.split("After the change:")
    assert "2026-03-08T03:00:00-04:00" in before
    assert "2026-03-08T03:00:00-04:00" in after  # 02:30 shifted out of the gap
    assert "2026-03-07T02:30:00-05:00" in after
    assert "2026-03-07T02:30:00-05:00" not in before
    stored = (await cli.ok("jobs", "get", job_id)).detail()
    assert stored["Schedule"] == "cron 0 3 * * * (America/New_York)"
    assert stored["Etag"] == 'W/"1"'
    history = (await cli.ok("jobs", "history", job_id)).table("VERSION")
    assert [r["CHANGE"] for r in history] == ["CREATE"]

    made = await cli.ok("jobs", "update", job_id, "-f", str(change))
    assert "Nothing changed" not in made.stdout
    history = (await cli.ok("jobs", "history", job_id)).table("VERSION")
    assert [(r["CHANGE"], r["FIELDS"]) for r in history] == [
        ("UPDATE", "schedule"),
        ("CREATE", "-"),
    ]
