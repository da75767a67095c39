"""``duetime calendars`` against the API process: a business-days calendar made from the command
line, a job file naming it, the preview marking the days it excludes, and a delete refused
while the job names it (docs/calendars.md)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from testkit.cli import Cli, api_on_own_database, team_cli

pytestmark = pytest.mark.timeout(120)

JOB_YAML = """\
displayName: weekday report
schedule:
  cron:
    expression: "0 9 * * *"
    timeZone: America/New_York
target:
  http:
    url: https://reports.internal/run
excludedCalendars: [work]
"""


@pytest.fixture(scope="module")
async def api(template_db: str) -> AsyncIterator[tuple[str, str]]:
    async with api_on_own_database(template_db) as running:
        yield running


@pytest.fixture
async def cli(api: tuple[str, str]) -> Cli:
    address, dsn = api
    return await team_cli(dsn, address, f"team-{uuid.uuid4().hex[:8]}")


async def test_business_days_from_the_command_line_skip_weekends_and_holidays(
    cli: Cli, tmp_path: Path
) -> None:
    made = await cli.ok(
        "calendars", "create", "work", "--zone", "America/New_York", "--business-days",
        "--date", "2099-12-25", "--yearly", "07-04", "--description", "NYSE-ish",
    )  # fmt: skip
    shown = made.detail()
    assert shown["Weekdays"] == "Saturday, Sunday"
    assert shown["Dates"] == "2099-12-25"
    assert shown["Yearly"] == "07-04"

    bad = await cli(
        "calendars", "create", "bad", "--zone", "America/New_York", "--date", "2099-02-30"
    )
    assert bad.code == 3
    assert "calendar.dates[0]" in bad.stderr

    (tmp_path / "job.yaml").write_text(JOB_YAML)
    job = (await cli.ok("jobs", "create", "-f", str(tmp_path / "job.yaml"))).detail()
    job_id = job["Name"].rsplit("/", 1)[1]
    assert job["Excluded calendars"] == "work"

    # Friday 2099-12-25 is a holiday, then a weekend: Monday the 28th runs.
    preview = await cli.ok("preview", "--job", job_id, "--after", "2099-12-24T00:00:00Z")
    rows = preview.table("#")
    marks = [(row["LOCAL TIME"][:10], row["SKIPPED BY CALENDAR"]) for row in rows[:5]]
    assert marks == [
        ("2099-12-24", ""),
        ("2099-12-25", "work"),
        ("2099-12-26", "work"),
        ("2099-12-27", "work"),
        ("2099-12-28", ""),
    ]

    listed = (await cli.ok("calendars", "list")).table("CALENDAR")
    assert [row["CALENDAR"] for row in listed] == ["work"]
    assert job["Name"] in (await cli.ok("calendars", "get", "work")).stdout

    refused = await cli("calendars", "delete", "work")
    assert refused.code == 6  # FAILED_PRECONDITION
    assert "CALENDAR_IN_USE" in refused.stderr
    assert job["Name"] in refused.stderr


async def test_an_update_replaces_the_kinds_of_rule_given_and_keeps_the_others(cli: Cli) -> None:
    unzoned = await cli("calendars", "create", "work", "--date", "2099-12-25")
    assert unzoned.code == 2
    assert "--zone is required" in unzoned.stderr
    await cli.ok(
        "calendars", "create", "work", "--zone", "Asia/Tokyo", "--weekday", "sun",
        "--date", "2099-12-25", "--range", "2099-08-10..2099-08-21",
    )  # fmt: skip
    changed = await cli.ok(
        "calendars", "update", "work", "--date", "2099-12-31", "--yearly", "01-01",
        "--description", "year end",
    )  # fmt: skip
    shown = changed.detail()
    assert shown["Zone"] == "Asia/Tokyo"
    assert shown["Weekdays"] == "Sunday"
    assert shown["Dates"] == "2099-12-31"
    assert shown["Ranges"] == "2099-08-10..2099-08-21"
    assert shown["Yearly"] == "01-01"
    assert shown["Description"] == "year end"
    moved = (await cli.ok("calendars", "update", "work", "--zone", "UTC")).detail()
    assert (moved["Zone"], moved["Dates"], moved["Description"]) == (
        "UTC",
        "2099-12-31",
        "year end",
    )
