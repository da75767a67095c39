"""The console's calendars in a real browser (Debian's chromium through Playwright) against the
API process: the team's calendars page, one calendar with the job that excludes it, the
job's page showing its calendars and the occurrences they skip, and the forms that create,
change and delete a calendar and attach one to a job (docs/calendars.md)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect

from testkit.cli import Cli, api_on_own_database, team_cli
from testkit.console import Console, browser_page, chromium, running_console, screenshot
from tests.e2e.test_cli_calendars import JOB_YAML

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as launched:
        yield launched


@pytest.fixture
async def live(template_db: str) -> AsyncIterator[tuple[Console, Cli]]:
    """The console before its own API and database, and ``duetime`` for a new team."""
    async with (
        api_on_own_database(template_db) as (address, dsn),
        running_console(address) as console,
    ):
        yield console, await team_cli(dsn, address, f"team-{uuid.uuid4().hex[:8]}")


async def _sign_in(page: Page, url: str, cli: Cli) -> None:
    await page.goto(url + "/signin")
    await page.get_by_label("Token").fill(cli.token)
    await page.get_by_role("button", name="Sign in").click()


async def test_the_calendars_page_and_a_jobs_skipped_occurrences(
    live: tuple[Console, Cli], browser: Browser, tmp_path: Path
) -> None:
    console, cli = live
    await cli.ok(
        "calendars", "create", "work", "--zone", "America/New_York", "--business-days",
        "--date", "2099-12-25", "--description", "trading days",
    )  # fmt: skip
    (tmp_path / "job.yaml").write_text(JOB_YAML)
    job = (await cli.ok("jobs", "create", "-f", str(tmp_path / "job.yaml"))).detail()
    job_id = job["Name"].rsplit("/", 1)[1]

    async with browser_page(browser) as page:
        await _sign_in(page, console.url, cli)

        await page.get_by_role("link", name="Calendars").click()
        table = page.locator("#calendars")
        await expect(table).to_contain_text("work")
        await expect(table).to_contain_text("Saturday, Sunday")
        await expect(table).to_contain_text("2099-12-25")
        await screenshot(page, "calendars")

        await page.get_by_role("link", name="work", exact=True).click()
        await expect(page.locator("#calendar-jobs")).to_contain_text(job["Name"])

        await page.goto(f"{console.url}/jobs/{job_id}")
        await expect(page.locator("#calendars")).to_have_text("work")
        # Whatever today is, the next ten daily occurrences hold a weekend: marked skipped.
        excluded = page.locator("tr.excluded")
        await expect(excluded.first).to_contain_text("skipped by work")
        count = await excluded.count()
        assert 2 <= count <= 10


async def _fill_calendar(page: Page, calendar_id: str, **rules: str) -> None:
    """The new-calendar form filled in: its id, zone, each weekday given, and the text of each
    date, range and yearly rule given."""
    await page.get_by_role("link", name="Calendars").click()
    await page.get_by_role("link", name="New calendar").click()
    await page.get_by_label("Id", exact=True).fill(calendar_id)
    await page.get_by_label("Zone its days are read in").select_option("America/New_York")
    for day in rules.pop("weekdays", "").split():
        await page.get_by_label(day, exact=True).check()
    for name, text in rules.items():
        await page.locator(f"#{name}").fill(text)


async def test_calendars_are_made_changed_and_deleted_in_the_console(
    live: tuple[Console, Cli], browser: Browser, tmp_path: Path
) -> None:
    console, cli = live
    (tmp_path / "job.yaml").write_text(JOB_YAML.replace("excludedCalendars: [work]\n", ""))
    job = (await cli.ok("jobs", "create", "-f", str(tmp_path / "job.yaml"))).detail()
    job_id = job["Name"].rsplit("/", 1)[1]

    async with browser_page(browser) as page:
        await _sign_in(page, console.url, cli)

        # Each kind of rule, made in the form, listed.
        await _fill_calendar(
            page,
            "work",
            weekdays="Saturday Sunday",
            dates="2099-12-25\n2099-12-31",
            date_ranges="2099-08-10..2099-08-21",
            yearly_dates="07-04",
        )
        await page.get_by_label("Description").fill("trading days")
        await screenshot(page, "calendar-new")
        await page.get_by_role("button", name="Create").click()
        await expect(page.get_by_role("status")).to_have_text("Created calendar work.")
        await expect(page).to_have_title("Calendar work · Duetime console")
        await page.get_by_role("link", name="Calendars").click()
        row = page.locator("#calendars tr", has_text="work")
        for shown in ("America/New_York", "Saturday, Sunday", "2099-12-25, 2099-12-31"):
            await expect(row).to_contain_text(shown)
        await expect(row).to_contain_text("2099-08-10 to 2099-08-21")
        await expect(row).to_contain_text("07-04")

        # A bad rule: the API's error names the field, the field is marked, the text kept.
        await _fill_calendar(page, "bad", date_ranges="2099-08-21..2099-08-10")
        await page.get_by_role("button", name="Create").click()
        alert = page.locator("#problems")
        await expect(alert).to_contain_text("calendar.date_ranges[0]")
        await expect(page.locator("#date_ranges")).to_have_attribute("aria-invalid", "true")
        await expect(page.locator("#date_ranges")).to_have_value("2099-08-21..2099-08-10")
        await expect(page.locator("#dates")).not_to_have_attribute("aria-invalid", "true")
        await page.locator("#date_ranges").fill("")
        await page.locator("#dates").fill("2099-02-30")
        await page.get_by_role("button", name="Create").click()
        await expect(alert).to_contain_text("calendar.dates[0]")
        await expect(page.locator("#dates")).to_have_attribute("aria-invalid", "true")
        assert (await cli("calendars", "get", "bad")).code != 0

        # An edit saved; an edit of a calendar changed meanwhile is refused, and kept.
        await page.goto(f"{console.url}/calendars/work")
        await page.get_by_role("link", name="Edit").click()
        await page.locator("#yearly_dates").fill("07-04\n12-26")
        await page.get_by_role("button", name="Save").click()
        await expect(page.get_by_role("status")).to_have_text("Saved.")
        await expect(page.locator("dl.detail")).to_contain_text("07-04, 12-26")
        await page.get_by_role("link", name="Edit").click()
        await page.get_by_label("Description").fill("mine")
        await cli.ok("calendars", "update", "work", "--description", "theirs")
        await page.get_by_role("button", name="Save").click()
        stale = page.get_by_role("alert")
        await expect(stale).to_contain_text("this calendar changed since you opened it")
        await expect(page.get_by_label("Description")).to_have_value("mine")
        assert (await cli.ok("calendars", "get", "work")).detail()["Description"] == "theirs"

        # Attached to the job on its form: the job's page shows it and what it skips.
        await page.goto(f"{console.url}/jobs/{job_id}/edit")
        await page.get_by_label("work", exact=True).check()
        await page.get_by_role("button", name="Save").click()
        await expect(page.locator("#calendars")).to_have_text("work")
        await expect(page.locator("tr.excluded").first).to_contain_text("skipped by work")

        # Its delete is refused while the job excludes it, naming the job; detached, it goes.
        await page.goto(f"{console.url}/calendars/work")
        await page.get_by_role("link", name="Delete").click()
        await expect(page.locator("p.notice")).to_contain_text("1 job excludes it")
        await page.get_by_role("button", name="Delete").click()
        await expect(page.locator("#in-use")).to_contain_text("1 job excludes this calendar")
        await expect(page.locator("#in-use")).to_contain_text(job["Name"])
        await page.locator("#in-use").get_by_role("link", name=job["Name"]).click()
        await page.get_by_label("work", exact=True).uncheck()
        await page.get_by_role("button", name="Save").click()
        await expect(page.locator("#calendars")).to_have_text("none")
        await page.goto(f"{console.url}/calendars/work")
        await page.get_by_role("link", name="Delete").click()
        await page.get_by_role("button", name="Delete").click()
        await expect(page.get_by_role("status")).to_have_text("Deleted calendar work.")
        await expect(page.locator("#calendars")).to_contain_text("No calendars.")
