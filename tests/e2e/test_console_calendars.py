"""The console's calendars in a real browser (Debian's chromium through Playwright) against the
API process: the team's calendars page, one calendar with the job that excludes it, and the
job's page showing its calendars and the occurrences they skip (docs/calendars.md)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from testkit.cli import api_on_own_database, team_cli
from testkit.console import browser_page, chromium, running_console, screenshot
from tests.e2e.test_cli_calendars import JOB_YAML

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as launched:
        yield launched


async def test_the_calendars_page_and_a_jobs_skipped_occurrences(
    template_db: str, browser: Browser, tmp_path: Path
) -> None:
    async with (
        api_on_own_database(template_db) as (address, dsn),
        running_console(address) as console,
    ):
        cli = await team_cli(dsn, address, f"team-{uuid.uuid4().hex[:8]}")
        await cli.ok(
            "calendars", "create", "work", "--zone", "America/New_York", "--business-days",
            "--date", "2099-12-25", "--description", "trading days",
        )  # fmt: skip
        (tmp_path / "job.yaml").write_text(JOB_YAML)
        job = (await cli.ok("jobs", "create", "-f", str(tmp_path / "job.yaml"))).detail()
        job_id = job["Name"].rsplit("/", 1)[1]

        async with browser_page(browser) as page:
            await page.goto(console.url + "/signin")
            await page.get_by_label("Token").fill(cli.token)
            await page.get_by_role("button", name="Sign in").click()

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
