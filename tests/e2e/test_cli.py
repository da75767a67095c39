"""A person (or a script) with the ``duetime`` command against the API process: job files in
YAML and JSON, tables and ``-o json|yaml``, etags, pause and resume, errors that name the bad
field with the exit code of their status family, DST in previews, shell completion."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from google.protobuf import json_format

from duetime.jobs.v1 import job_pb2, job_service_pb2
from duetime_client.describe import when
from testkit.cli import (
    Cli,
    api_on_own_database,
    api_response,
    cli_env,
    duetime_command,
    team_cli,
)
from testkit.polling import eventually
from testkit.terminal import screen_table, terminal
from testkit.tls import make_certs, stack_certs

pytestmark = pytest.mark.timeout(120)

CRON_JOB_YAML = """\
# A job file is duetime.jobs.v1.Job in proto3 JSON form, here written as YAML.
displayName: nightly invoices
schedule:
  cron:
    expression: "0 2 * * *"
    timeZone: Asia/Kolkata
target:
  http:
    url: https://billing.internal/run-invoices
    headers:
      Authorization: Bearer t0ps3cret
retryPolicy:
  maxAttempts: 5
  initialBackoff: 2s
attemptTimeout: 90s
"""

DURATIONS_JOB_YAML = """\
displayName: durations as people write them
schedule:
  interval:
    interval: 1h30m
    startTime: "2099-01-01T00:00:00Z"
target:
  http:
    url: https://billing.internal/run-invoices
attemptTimeout: 5m
jitterWindow: 90s
retryPolicy:
  maxAttempts: 4
  initialBackoff: 1m
  maxBackoff: 30m
misfire:
  policy: MISFIRE_POLICY_RUN_ONCE
  threshold: 1.5s
"""

INTERVAL_JOB = {
    # Proto field names work too; the name is shown as written, never read as rich markup.
    "display_name": "[prod] cache warmer",
    "schedule": {"interval": {"interval": "3600s", "startTime": "2099-01-01T00:00:00Z"}},
    "target": {"http": {"url": "https://cache.internal/warm", "method": "HTTP_METHOD_PUT"}},
}


@pytest.fixture(scope="module")
async def api(template_db: str) -> AsyncIterator[tuple[str, str]]:
    """One API process for the module, on a database of its own; each test has its team."""
    async with api_on_own_database(template_db) as running:
        yield running


@pytest.fixture
async def cli(api: tuple[str, str]) -> Cli:
    address, dsn = api
    return await team_cli(dsn, address, f"team-{uuid.uuid4().hex[:8]}")


async def test_create_from_yaml_and_json_then_list_and_get(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "nightly.yaml").write_text(CRON_JOB_YAML)
    (tmp_path / "warmer.json").write_text(json.dumps(INTERVAL_JOB))

    created = (await cli.ok("jobs", "create", "-f", str(tmp_path / "nightly.yaml"))).detail()
    assert created["Name"].startswith(f"teams/{cli.team}/jobs/")
    assert created["State"] == "ACTIVE"
    assert created["Schedule"] == "cron 0 2 * * * (Asia/Kolkata)"
    assert created["Next run"].endswith(" 20:30:00Z")  # 02:00 in Kolkata
    assert created["Target"] == "POST https://billing.internal/run-invoices"
    assert created["Retry"].startswith("5 attempts, backoff 2s..")
    assert created["Attempt timeout"] == "1m30s"
    nightly_id = created["Name"].rsplit("/", 1)[1]

    warmer = await cli.ok("jobs", "create", "-f", str(tmp_path / "warmer.json"), "-o", "json")
    job = warmer.json()["job"]
    assert job["displayName"] == "[prod] cache warmer"
    assert job["state"] == "JOB_STATE_ACTIVE"
    assert job["nextRunTime"] == "2099-01-01T00:00:00Z"
    assert job["target"]["http"]["method"] == "HTTP_METHOD_PUT"

    # The list, newest first, as a table for people and exactly the API's answer for scripts
    # (JSON or YAML); one job by id alone (the team is found from the token) or by full name.
    name = created["Name"]
    table, listed, as_yaml, by_id, by_name, shown = await asyncio.gather(
        cli.ok("jobs", "list"),
        cli.ok("jobs", "list", "-o", "json"),
        cli.ok("jobs", "list", "-o", "yaml"),
        cli.ok("jobs", "get", nightly_id, "-o", "json"),
        cli.ok("jobs", "get", name, "-o", "json"),
        cli.ok("jobs", "get", nightly_id),
    )
    header, rule, *rows = table.stdout.splitlines()
    assert header.split() == [
        "JOB", "ID", "NAME", "SCHEDULE", "TARGET", "STATE", "NEXT", "RUN", "(UTC)"
    ]  # fmt: skip
    assert set(rule) == {"─"}
    assert len(rows) == 2
    assert rows[0].split()[:5] == [job["jobId"], "[prod]", "cache", "warmer", "every"]
    assert rows[1].split()[:3] == [nightly_id, "nightly", "invoices"]
    schedule_and_target = r" cron 0 2 \* \* \* \(Asia/Kolkata\) +POST https://billing\.internal/"
    assert re.search(schedule_and_target, rows[1])
    assert rows[1].split()[-3:-1] == ["ACTIVE", created["Next run"].split()[0]]
    assert listed.json() == await api_response(cli, "ListJobs", job_service_pb2.ListJobsRequest())
    assert [j["jobId"] for j in listed.json()["jobs"]] == [job["jobId"], nightly_id]
    assert yaml.safe_load(as_yaml.stdout) == listed.json()
    request = job_service_pb2.GetJobRequest(name=name)
    assert by_id.json() == by_name.json() == await api_response(cli, "GetJob", request)
    assert shown.detail() == created
    # Secrets never come back.
    assert by_id.json()["job"]["target"]["http"]["headers"] == {"Authorization": "[REDACTED]"}
    assert "t0ps3cret" not in listed.stdout

    # A request id makes create idempotent.
    file = str(tmp_path / "warmer.json")
    first = await cli.ok("jobs", "create", "-f", file, "--request-id", "r-1", "-o", "json")
    again = await cli.ok("jobs", "create", "-f", file, "--request-id", "r-1", "-o", "json")
    assert first.json()["job"]["jobId"] == again.json()["job"]["jobId"] != job["jobId"]

    # --limit stops early, leaving the token of the next page; 0 reads every page.
    two, every = await asyncio.gather(
        cli.ok("jobs", "list", "--limit", "2", "-o", "json"),
        cli.ok("jobs", "list", "--limit", "0", "-o", "json"),
    )
    assert [j["jobId"] for j in two.json()["jobs"]] == [first.json()["job"]["jobId"], job["jobId"]]
    assert two.json()["nextPageToken"]
    assert len(every.json()["jobs"]) == 3
    assert "nextPageToken" not in every.json()


async def test_update_checks_the_etag(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "nightly.yaml").write_text(CRON_JOB_YAML)
    job = await cli.ok("jobs", "create", "-f", str(tmp_path / "nightly.yaml"), "-o", "json")
    job_id, first_etag = job.json()["job"]["jobId"], job.json()["job"]["etag"]

    renamed = await cli.ok(
        "jobs", "update", job_id, "--display-name", "renamed", "--etag", first_etag
    )
    assert renamed.detail()["Display name"] == "renamed"
    assert renamed.detail()["Etag"] != first_etag

    stale = await cli("jobs", "update", job_id, "--display-name", "lost", "--etag", first_etag)
    assert stale.code == 5, stale
    assert stale.stderr.startswith("Error: ABORTED (ETAG_MISMATCH): "), stale.stderr
    stale_json = await cli("jobs", "pause", job_id, "--etag", first_etag, "-o", "json")
    assert stale_json.code == 5
    assert stale_json.error()["code"] == "ABORTED"
    assert stale_json.error()["reason"] == "ETAG_MISMATCH"

    # A job saved with `get -o yaml`, edited and given back: only the fields it holds that a
    # person can change are updated, and its etag is checked.
    saved = tmp_path / "saved.yaml"
    saved.write_text((await cli.ok("jobs", "get", job_id, "-o", "yaml")).stdout)
    edited = yaml.safe_load(saved.read_text())
    edited["job"]["retryPolicy"]["maxAttempts"] = 9
    saved.write_text(yaml.safe_dump(edited))
    updated = (await cli.ok("jobs", "update", "-f", str(saved), "-o", "json")).json()["job"]
    assert updated["retryPolicy"]["maxAttempts"] == 9
    assert updated["displayName"] == "renamed"
    assert updated["target"]["http"]["headers"] == {"Authorization": "[REDACTED]"}
    replayed = await cli("jobs", "update", "-f", str(saved))
    assert replayed.code == 5, replayed
    assert "ETAG_MISMATCH" in replayed.stderr


async def test_a_job_file_applied_again_keeps_the_interval_anchor(cli: Cli, tmp_path: Path) -> None:
    every = {
        "schedule": {"interval": {"interval": "30s"}},
        "target": {"http": {"url": "https://cache.internal/warm"}},
    }
    (tmp_path / "every.json").write_text(json.dumps(every))
    created = await cli.ok("jobs", "create", "-f", str(tmp_path / "every.json"), "-o", "json")
    job = created.json()["job"]
    anchor = job["schedule"]["interval"]["anchorTime"]
    # The anchor the server chose is in every output form.
    shown = await cli.ok("jobs", "get", job["jobId"])
    assert shown.detail()["Schedule"] == f"every 30s, anchored at {_cli_time(anchor)}"
    saved = tmp_path / "saved.yaml"
    saved.write_text((await cli.ok("jobs", "get", job["jobId"], "-o", "yaml")).stdout)
    assert yaml.safe_load(saved.read_text())["job"]["schedule"]["interval"]["anchorTime"] == anchor
    # Applied again (the round trip the docs give): nothing moves, and the answer says so.
    again = await cli.ok("jobs", "update", "-f", str(saved))
    assert f"Schedule unchanged: the next run stays at {_cli_time(job['nextRunTime'])}." in (
        again.stdout
    )
    # A changed interval says where the next run went.
    every["schedule"]["interval"]["interval"] = "3600s"
    (tmp_path / "every.json").write_text(json.dumps(every | {"name": job["name"]}))
    moved = await cli.ok("jobs", "update", "-f", str(tmp_path / "every.json"), "-o", "json")
    assert moved.json()["scheduleChanged"] is True
    assert moved.json()["previousNextRunTime"] == job["nextRunTime"]
    assert moved.json()["job"]["nextRunTime"] != job["nextRunTime"]


ENDING_JOB_YAML = """\
displayName: ends
schedule:
  interval:
    interval: 30s
    startTime: "2099-01-01T00:00:00Z"
  endTime: "2099-01-02T00:00:00Z"
  maxRuns: 3
target:
  http:
    url: https://cache.internal/warm
"""


async def test_a_schedule_that_ends_in_a_job_file_the_tables_and_preview(
    cli: Cli, tmp_path: Path
) -> None:
    (tmp_path / "ends.yaml").write_text(ENDING_JOB_YAML)
    created = (await cli.ok("jobs", "create", "-f", str(tmp_path / "ends.yaml"))).detail()
    assert created["Schedule"] == (
        "every 30s from 2099-01-01 00:00:00Z until 2099-01-02 00:00:00Z, at most 3 runs"
    )
    assert created["Scheduled runs"] == "0 of at most 3"
    job_id = created["Name"].rsplit("/", 1)[1]
    # Saved and given back: the end reads back as written, and nothing changes.
    saved = tmp_path / "saved.yaml"
    saved.write_text((await cli.ok("jobs", "get", job_id, "-o", "yaml")).stdout)
    schedule = yaml.safe_load(saved.read_text())["job"]["schedule"]
    assert (schedule["endTime"], schedule["maxRuns"]) == ("2099-01-02T00:00:00Z", 3)
    again = await cli.ok("jobs", "update", "-f", str(saved))
    assert "Schedule unchanged" in again.stdout
    # A preview stops at the end, a dry run of a lower max_runs shows fewer runs.
    shown = await cli.ok(
        "preview", "--every", "30s", "--start", "2099-01-01T00:00:00Z", "--max-runs", "2",
        "--end", "2099-01-01T00:10:00Z", "--after", "2098-12-31T00:00:00Z", "-o", "json",
    )  # fmt: skip
    assert [o["nominalTime"] for o in shown.json()["occurrences"]] == [
        "2099-01-01T00:00:00Z",
        "2099-01-01T00:00:30Z",
    ]
    (tmp_path / "lower.yaml").write_text(ENDING_JOB_YAML.replace("maxRuns: 3", "maxRuns: 1"))
    dry = await cli.ok(
        "jobs", "update", job_id, "-f", str(tmp_path / "lower.yaml"), "--dry-run", "-o", "json"
    )
    assert [o["nominalTime"] for o in dry.json()["updatedOccurrences"]] == ["2099-01-01T00:00:00Z"]
    assert len(dry.json()["currentOccurrences"]) == 3
    # A bad end is the server's INVALID_ARGUMENT, naming the field.
    (tmp_path / "bad.yaml").write_text(ENDING_JOB_YAML.replace("maxRuns: 3", "maxRuns: 0"))
    bad = await cli("jobs", "create", "-f", str(tmp_path / "bad.yaml"))
    assert bad.code == 3, bad
    assert "  job.schedule.max_runs: must be between 1 and 1000000000, got 0" in bad.stderr
    mixed = await cli("preview", "--job", job_id, "--max-runs", "2")
    assert mixed.code == 2, mixed


def _cli_time(rfc3339: str) -> str:
    """The CLI's table form of an API timestamp."""
    holder = job_pb2.IntervalSchedule()
    holder.start_time.FromJsonString(rfc3339)
    return when(holder, "start_time")


async def test_pause_resume_and_delete(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "job.json").write_text(json.dumps(INTERVAL_JOB))
    job_id = (
        await cli.ok("jobs", "create", "-f", str(tmp_path / "job.json"), "-o", "json")
    ).json()["job"]["jobId"]
    assert (await cli.ok("jobs", "pause", job_id)).detail()["State"] == "PAUSED"
    paused = await cli.ok("jobs", "list", "--state", "paused", "-o", "json")
    assert [j["jobId"] for j in paused.json()["jobs"]] == [job_id]
    again = await cli("jobs", "pause", job_id)
    assert again.code == 6, again
    assert again.stderr.startswith("Error: FAILED_PRECONDITION (JOB_NOT_ACTIVE): ")
    assert (await cli.ok("jobs", "resume", job_id)).detail()["State"] == "ACTIVE"

    name = f"teams/{cli.team}/jobs/{job_id}"
    deleted = await cli.ok("jobs", "delete", job_id)
    assert deleted.stdout.strip() == f"deleted {name}"
    gone = await cli("jobs", "get", name, "-o", "json")
    assert gone.code == 4
    assert gone.error() == {
        "code": "NOT_FOUND",
        "message": "job not found",
        "reason": "JOB_NOT_FOUND",
    }
    # With no job left, a bare id is still placed in the token's team (GetTeamQuota names it).
    bare, with_team = await asyncio.gather(
        cli("jobs", "get", job_id), cli("--team", cli.team, "jobs", "get", job_id)
    )
    for result in (bare, with_team):
        assert result.code == 4
        assert result.stderr == "Error: NOT_FOUND (JOB_NOT_FOUND): job not found\n"


# Bad job files: the field each names, and the start of why.
BAD_FILES = {
    # Refused by the server (INVALID_ARGUMENT with a BadRequest) ...
    "hour.yaml": (
        CRON_JOB_YAML.replace('"0 2 * * *"', '"0 25 * * *"'),
        "job.schedule.cron.expression",
        "hour field '25': 25 is out of range",
    ),
    "scheme.yaml": (
        CRON_JOB_YAML.replace("https://billing", "ftp://billing"),
        "job.target.http.url",
        "",
    ),
    # ... or by the command before any call, when the file does not parse as a Job.
    "unknown.yaml": (
        CRON_JOB_YAML.replace("expression:", "expresion:"),
        "job.schedule.cron.expresion",
        "unknown field; CronSchedule has expression, timeZone, gapPolicy, foldPolicy",
    ),
    "type.yaml": (
        CRON_JOB_YAML.replace("maxAttempts: 5", "maxAttempts: many"),
        "job.retry_policy.max_attempts",
        "invalid literal for int()",
    ),
    "duration.json": (
        json.dumps({**INTERVAL_JOB, "attemptTimeout": "90 seconds"}),
        "job.attempt_timeout",
        "'90 seconds' is not a duration like 90s, 5m, 1h30m or 2d",
    ),
    "syntax.yaml": (
        CRON_JOB_YAML.replace("  cron:\n", "  cron: [\n"),
        "job",
        "does not parse: expected ',' or ']', but got '<scalar>' (line 6, column 5)",
    ),
}


async def test_a_bad_job_file_names_the_field(cli: Cli, tmp_path: Path) -> None:
    for file, (content, _, _) in BAD_FILES.items():
        (tmp_path / file).write_text(content)
    people = await asyncio.gather(
        *(cli("jobs", "create", "-f", str(tmp_path / file)) for file in BAD_FILES)
    )
    for result, (file, (_, field, why)) in zip(people, BAD_FILES.items(), strict=True):
        assert result.code == 3, (file, result)
        first, *violations = result.stderr.splitlines()
        assert first.startswith("Error: INVALID_ARGUMENT"), (file, result.stderr)
        assert len(violations) == 1, (file, result.stderr)
        assert violations[0].startswith(f"  {field}: {why}"), (file, result.stderr)
    # Scripts get the same in JSON, from the server's BadRequest or the local check alike.
    scripts = await asyncio.gather(
        cli("jobs", "create", "-f", str(tmp_path / "hour.yaml"), "-o", "json"),
        cli("jobs", "create", "-f", str(tmp_path / "type.yaml"), "-o", "json"),
    )
    for result, file in zip(scripts, ["hour.yaml", "type.yaml"], strict=True):
        assert result.code == 3
        assert result.error()["code"] == "INVALID_ARGUMENT"
        assert [v["field"] for v in result.error()["fieldViolations"]] == [BAD_FILES[file][1]]
    assert (await cli.ok("jobs", "list", "-o", "json")).json() == {}  # nothing was created


async def test_exit_codes_of_other_failures(cli: Cli, tmp_path: Path) -> None:
    no_token, bad_token, closed, usage, missing = await asyncio.gather(
        cli("jobs", "list", env={"DUETIME_TOKEN": ""}),
        cli("--token", "dtt_nope", "jobs", "list", "-o", "json"),
        cli("--api", "127.0.0.1:1", "jobs", "list"),
        cli("jobs", "list", "--colour"),
        cli("jobs", "create", "-f", str(tmp_path / "absent.yaml")),
    )
    assert (no_token.code, no_token.stderr) == (
        7,
        "Error: UNAUTHENTICATED: no token: pass --token or set DUETIME_TOKEN\n",
    )
    assert bad_token.code == 7
    assert bad_token.error()["code"] == "UNAUTHENTICATED"
    assert closed.code == 9, closed
    assert closed.stderr.startswith("Error: UNAVAILABLE: "), closed.stderr
    assert usage.code == 2
    assert "No such option: --colour" in usage.stderr
    assert missing.code == 2
    assert "cannot read" in missing.stderr


NEW_YORK = ("--tz", "America/New_York")


async def test_preview_shows_dst_adjustments(cli: Cli) -> None:
    spring, autumn, one_off, interval, bad = await asyncio.gather(
        cli.ok("preview", "--cron", "30 2 * * *", *NEW_YORK, "--after", "2026-03-07T00:00:00Z",
               "--count", "3"),
        cli.ok("preview", "--cron", "30 1 * * *", *NEW_YORK, "--fold-policy", "both",
               "--after", "2026-11-01T00:00:00Z", "--count", "3", "-o", "json"),
        cli.ok("preview", "--at-local", "2026-03-08T02:30:00", *NEW_YORK,
               "--after", "2026-03-01T00:00:00Z"),
        cli.ok("preview", "--every", "1h30m", "--start", "2026-01-01T00:00:00Z",
               "--after", "2026-01-01T00:00:00Z", "--count", "2", "-o", "yaml"),
        cli("preview", "--cron", "30 2 * *", "--tz", "Mars/Olympus", "-o", "json"),
    )  # fmt: skip
    # 02:30 does not exist in New York on 2026-03-08 (02:00 -> 03:00): shifted to 03:00 EDT.
    header, _, *rows = spring.stdout.splitlines()
    assert header.split() == ["#", "LOCAL", "TIME", "UTC", "DST"]
    assert [r.split()[:4] for r in rows] == [
        ["1", "2026-03-07T02:30:00-05:00", "2026-03-07", "07:30:00Z"],
        ["2", "2026-03-08T03:00:00-04:00", "2026-03-08", "07:00:00Z"],
        ["3", "2026-03-09T02:30:00-04:00", "2026-03-09", "06:30:00Z"],
    ]
    assert [r[r.index("Z ") + 1 :].strip() for r in rows] == [
        "",
        "shifted: the written time is in the DST gap",
        "",
    ]

    # 01:30 happens twice on 2026-11-01 (02:00 EDT -> 01:00 EST); BOTH runs at both passes.
    occurrences = autumn.json()["occurrences"]
    assert [(o["localTime"], o.get("dstAdjustment")) for o in occurrences] == [
        ("2026-11-01T01:30:00-04:00", "DST_ADJUSTMENT_FOLD_FIRST_PASS"),
        ("2026-11-01T01:30:00-05:00", "DST_ADJUSTMENT_FOLD_SECOND_PASS"),
        ("2026-11-02T01:30:00-05:00", None),
    ]
    request = json_format.ParseDict(
        {
            "schedule": {
                "cron": {
                    "expression": "30 1 * * *",
                    "timeZone": "America/New_York",
                    "foldPolicy": "DST_FOLD_POLICY_BOTH",
                }
            },
            "startTime": "2026-11-01T00:00:00Z",
            "count": 3,
        },
        job_service_pb2.PreviewScheduleRequest(),
    )
    assert autumn.json() == await api_response(cli, "PreviewSchedule", request)

    # Other kinds: a one-off wall-clock time in the gap, an interval.
    (row,) = one_off.stdout.splitlines()[2:]
    assert row.split()[1] == "2026-03-08T03:00:00-04:00"
    assert row.endswith("shifted: the written time is in the DST gap")
    assert [o["nominalTime"] for o in yaml.safe_load(interval.stdout)["occurrences"]] == [
        "2026-01-01T01:30:00Z",
        "2026-01-01T03:00:00Z",
    ]
    assert bad.code == 3
    fields = {v["field"] for v in bad.error()["fieldViolations"]}
    assert fields == {"schedule.cron.expression", "schedule.cron.time_zone"}


async def test_shell_completion(cli: Cli) -> None:
    def bash(words: str) -> dict[str, str]:
        """What bash hands the command when TAB is pressed after ``words``."""
        return {
            "_DUETIME_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split()) - 1),
        }

    group, command, state, role, script = await asyncio.gather(
        cli.ok(env=bash("duetime j")),
        cli.ok(env=bash("duetime jobs pa")),
        cli.ok(env=bash("duetime runs list some-job --state DE")),
        cli.ok(env=bash("duetime admin tokens create --role OP")),
        cli.ok("--show-completion", "bash"),
    )
    assert group.stdout.split() == ["jobs"]
    assert command.stdout.split() == ["pause"]
    assert state.stdout.split() == ["DEAD_LETTERED"]
    assert role.stdout.split() == ["OPERATOR"]
    assert "_DUETIME_COMPLETE=complete_bash" in script.stdout


# What `jobs list` shows at each width: the columns of least use go first (TARGET, then
# SCHEDULE, then NEXT RUN) so that the ids, names and states stay whole.
JOBS_COLUMNS = {
    80: ["JOB ID", "NAME", "STATE"],
    120: ["JOB ID", "NAME", "SCHEDULE", "STATE", "NEXT RUN (UTC)"],
    200: ["JOB ID", "NAME", "SCHEDULE", "TARGET", "STATE", "NEXT RUN (UTC)"],
}


async def test_a_person_sees_the_jobs_table_in_a_terminal(cli: Cli, tmp_path: Path) -> None:
    """`duetime jobs list` in a real terminal (tmux) 80, 120 and 200 columns wide, read off
    its screen: ids and states whole, headings on one line, text wrapped between words."""
    (tmp_path / "nightly.yaml").write_text(CRON_JOB_YAML)
    (tmp_path / "warmer.json").write_text(json.dumps(INTERVAL_JOB))
    nightly = await cli.ok("jobs", "create", "-f", str(tmp_path / "nightly.yaml"), "-o", "json")
    warmer = await cli.ok("jobs", "create", "-f", str(tmp_path / "warmer.json"), "-o", "json")
    expected = [  # newest first
        {"SCHEDULE": "every 1h from 2099-01-01 00:00:00Z", "TARGET": "PUT https://cache.internal/warm"},
        {"SCHEDULE": "cron 0 2 * * * (Asia/Kolkata)", "TARGET": "POST https://billing.internal/run-invoices"},
    ]  # fmt: skip
    for cells, created in zip(expected, (warmer, nightly), strict=True):
        job = created.json()["job"]
        cells |= {"JOB ID": job["jobId"], "NAME": job["displayName"], "STATE": "ACTIVE"}
        cells["NEXT RUN (UTC)"] = job["nextRunTime"].replace("T", " ")
    for width, columns in JOBS_COLUMNS.items():
        async with terminal() as term:
            await term.start(f"{duetime_command()} jobs list", cli_env(cli.api, cli.token), width)
            screen = await term.finished()
            colours = await term.colours()
        heads, rows = screen_table(screen, "JOB ID")
        assert heads == columns, (width, screen)
        assert rows == [{h: cells[h] for h in columns} for cells in expected], (width, screen)
        assert max(len(line) for line in screen) <= width, screen
    # At 200 columns one line per job: nothing wrapped.
    header = screen.index(next(line for line in screen if line.startswith("JOB ID")))
    assert screen[header + 4 :] == ["", "exit 0"], screen
    # A person sees the states in colour; a pipe gets none.
    assert colours.count("\x1b[32mACTIVE") == 2, colours
    assert "\x1b[" not in (await cli.ok("jobs", "list")).stdout


async def test_version_and_help_as_wide_as_the_terminal(cli: Cli) -> None:
    shown, wide, narrow = await asyncio.gather(
        cli.ok("--version"),
        cli.ok("runs", "list", "--help", env={"COLUMNS": "160"}),
        cli.ok("runs", "list", "--help", env={"COLUMNS": "80"}),
    )
    assert shown.stdout == f"duetime {version('duetime-cli')}\n"
    state = (
        "Only runs in this state: QUEUED, WAITING, RUNNING, RETRY_WAIT, SUCCEEDED, DEAD_LETTERED"
    )
    assert any(state in line for line in wide.stdout.splitlines()), wide.stdout
    assert 80 < max(map(len, wide.stdout.splitlines())) <= 160, wide.stdout
    assert max(map(len, narrow.stdout.splitlines())) <= 80, narrow.stdout


async def test_durations_as_the_cli_prints_them(cli: Cli, tmp_path: Path) -> None:
    """A job file takes durations the way the CLI shows them (and proto3 JSON's); a bad one
    is named by its field before anything is sent. (That every form the CLI prints reads back:
    tests/unit/test_cli_text.py.)"""
    (tmp_path / "job.yaml").write_text(DURATIONS_JOB_YAML)
    created = await cli.ok("jobs", "create", "-f", str(tmp_path / "job.yaml"), "-o", "json")
    job = created.json()["job"]
    assert job["attemptTimeout"] == "300s"
    assert job["schedule"]["interval"]["interval"] == "5400s"
    assert job["jitterWindow"] == "90s"
    assert job["retryPolicy"]["initialBackoff"] == "60s"
    assert job["retryPolicy"]["maxBackoff"] == "1800s"
    assert job["misfire"]["threshold"] == "1.500s"
    shown = (await cli.ok("jobs", "get", job["jobId"])).detail()
    assert shown["Attempt timeout"] == "5m"
    assert shown["Jitter window"] == "1m30s"
    assert shown["Retry"] == "4 attempts, backoff 1m..30m x2"
    assert shown["Misfire"] == "RUN_ONCE, threshold 1.5s"

    bad_file = DURATIONS_JOB_YAML.replace("maxBackoff: 30m", "maxBackoff: 30 min")
    (tmp_path / "bad.yaml").write_text(bad_file)
    bad = await cli("jobs", "create", "-f", str(tmp_path / "bad.yaml"))
    assert bad.code == 3, bad
    assert bad.stderr.splitlines()[1:] == [
        "  job.retry_policy.max_backoff: '30 min' is not a duration like 90s, 5m, 1h30m or 2d"
    ], bad.stderr


async def test_a_server_certificate_not_trusted_says_where_the_ca_goes(
    cli: Cli, tmp_path: Path
) -> None:
    """With no CA (the system's) or the wrong one, the command says the server's certificate
    was not trusted and where the CA goes, exit 7; gRPC's own log lines stay off stderr."""
    if stack_certs() is None:
        pytest.fail('the environment names no TLS settings: eval "$(scripts/stack env)"')
    other = await make_certs(tmp_path / "other")
    no_ca, wrong_ca, as_json = await asyncio.gather(
        cli("jobs", "list", env={"DUETIME_TLS_CA_FILE": ""}),
        cli("--ca-file", other.ca, "jobs", "list"),
        cli("jobs", "list", "-o", "json", env={"DUETIME_TLS_CA_FILE": other.ca}),
    )
    where = "give the CA that signed it with --ca-file FILE or DUETIME_TLS_CA_FILE"
    untrusted = (
        "Error: UNAUTHENTICATED (SERVER_CERTIFICATE_UNTRUSTED): the server's certificate at "
        f"{cli.api} was not trusted with {{}} (unable to get local issuer certificate): {where}\n"
    )
    assert (no_ca.code, no_ca.stderr) == (7, untrusted.format("the system's CAs"))
    assert (wrong_ca.code, wrong_ca.stderr) == (7, untrusted.format(f"the CA in {other.ca}"))
    assert as_json.code == 7
    assert as_json.error()["reason"] == "SERVER_CERTIFICATE_UNTRUSTED"
    assert as_json.error()["message"].endswith(where)
    for result in (no_ca, wrong_ca, as_json):
        assert result.stdout == ""
        assert "Traceback" not in result.stderr
        assert not re.search(r"^[IWEF]\d{4} |: OK$", result.stderr, re.M), result.stderr


async def test_ctrl_c_ends_a_command_with_one_line(cli: Cli, tmp_path: Path) -> None:
    """Ctrl-C in a real terminal, while a command waits for a run (this API has no scheduler:
    the run stays QUEUED) and while the command is still importing its libraries: exit 130,
    one line, no traceback."""
    (tmp_path / "job.json").write_text(json.dumps(INTERVAL_JOB))
    created = await cli.ok("jobs", "create", "-f", str(tmp_path / "job.json"), "-o", "json")
    job = created.json()["job"]
    env = cli_env(cli.api, cli.token)
    async with terminal() as term:
        await term.start(f"{duetime_command()} jobs trigger {job['jobId']} --wait", env, 100)

        async def waiting() -> bool:
            return "QUEUED" in "\n".join(await term.screen())

        await eventually(waiting, 30, "the command follows the run")
        await term.keys("C-c")
        screen = await term.finished()
    following = f"Error: CANCELLED: stopped following; it goes on: duetime runs get {job['name']}"
    errors = [line for line in screen if line.startswith("Error: ")]
    assert len(errors) == 1, screen
    assert re.fullmatch(re.escape(following) + "/runs/[0-9a-f-]+", errors[0]), screen
    assert screen[-2:] == ["", "exit 130"], screen
    assert not [line for line in screen if "Traceback" in line], screen

    # A library that takes its time to import (here one that waits for the test) stands for
    # the first half second of every command, spent importing gRPC, protobuf and rich.
    slow = tmp_path / "slow"
    (slow / "typer").mkdir(parents=True)
    (slow / "typer" / "__init__.py").write_text(
        "import subprocess, time\n"
        "subprocess.run(['tmux', 'wait-for', '-S', 'importing'], check=True)\n"
        "time.sleep(60)\n"
    )
    async with terminal() as term:
        await term.start(f"{duetime_command()} jobs list", {**env, "PYTHONPATH": str(slow)}, 100)
        await term.tmux("wait-for", "importing")
        await term.keys("C-c")
        screen = await term.finished()
    assert [line for line in screen if line.strip()] == ["^Cinterrupted", "exit 130"], screen
