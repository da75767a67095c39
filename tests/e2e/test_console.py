"""The console in a real browser (Debian's chromium through Playwright) against the services as
processes: signing in and out, jobs made from the form and their runs, filters, bulk actions,
dead letters, the operator's pages; what it refuses (a form without its CSRF token, another
team's job, an operator token on a team's page); and that no token reaches a URL or a log.

With DUETIME_SCREENSHOTS=1 the tests write the main pages' screenshots to docs/console/."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg
import pytest
from playwright.async_api import Browser, Page, expect

from duetime_infra.admin import create_operator_token, create_team
from tests.support.console import (
    Console,
    browser_page,
    chromium,
    http_client,
    running_console,
    screenshot,
)
from tests.support.databases import create_database, drop_database
from tests.support.http_target import HttpTarget, http_target
from tests.support.system import System, running_system

pytestmark = pytest.mark.timeout(180)


@dataclass
class Live:
    system: System
    console: Console
    target: HttpTarget

    async def team(self, prefix: str = "team") -> tuple[str, str]:
        """A new team and its token."""
        team = f"{prefix}-{uuid.uuid4().hex[:8]}"
        conn = await asyncpg.connect(self.system.db_dsn)
        try:
            return team, await create_team(conn, team)
        finally:
            await conn.close()

    async def operator(self) -> str:
        conn = await asyncpg.connect(self.system.db_dsn)
        try:
            return await create_operator_token(conn, "console tests")
        finally:
            await conn.close()


@pytest.fixture(scope="module")
async def live(template_db: str) -> AsyncIterator[Live]:
    """One system, target and console for the module; each test signs in as a team of its
    own."""
    name = f"duetime_t_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name, template=template_db)
    try:
        async with (
            http_target() as target,
            running_system(dsn) as system,
            running_console(system.api_service.address) as console,
        ):
            yield Live(system, console, target)
    finally:
        await drop_database(name)


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as launched:
        yield launched


async def sign_in(page: Page, console: Console, token: str) -> None:
    await page.goto(console.url + "/signin")
    await page.get_by_label("Token").fill(token)
    await page.get_by_role("button", name="Sign in").click()


async def test_sign_in_and_out_keeps_the_token_out_of_urls_and_logs(
    live: Live, browser: Browser
) -> None:
    team, token = await live.team()
    async with browser_page(browser) as page:
        requested: list[str] = []
        page.on("request", lambda request: requested.append(request.url))
        await page.goto(live.console.url + "/jobs")
        # Not signed in: to the sign-in page, which comes back to where the viewer was going.
        await expect(page).to_have_url(re.compile(r"/signin\?next=%2Fjobs$"))
        await screenshot(page, "signin")
        # The browser's own zone is picked for the viewer.
        await expect(page.get_by_label("Show times in")).to_have_value("Europe/Paris")
        await page.get_by_label("Token").fill("dtt_not-a-token")
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_role("alert")).to_contain_text("not valid")

        await page.get_by_label("Token").fill(token)
        await page.get_by_role("button", name="Sign in").click()
        await expect(page).to_have_url(live.console.url + "/jobs")
        await expect(page.locator("header .who")).to_contain_text(f"team {team}")
        await expect(page.locator("header .who")).to_contain_text("Europe/Paris")

        cookies = await page.context.cookies()
        session = next(c for c in cookies if c["name"] == "__Host-duetime-session")
        assert (session["secure"], session["httpOnly"], session["sameSite"]) == (
            True,
            True,
            "Strict",
        )
        assert token not in session["value"]

        await page.get_by_role("button", name="Sign out").click()
        await expect(page).to_have_url(live.console.url + "/signin")
        await expect(page.get_by_role("status")).to_have_text("Signed out.")
        await page.goto(live.console.url + "/jobs")
        await expect(page).to_have_url(re.compile(r"/signin\?next="))
    assert not [url for url in requested if token in url]
    assert token not in live.console.log()


async def test_a_form_without_its_csrf_token_is_refused(live: Live) -> None:
    _, token = await live.team()
    async with http_client() as client:
        # Without the session's token, even the sign-in form is refused; with it, it signs in.
        async with client.get(live.console.url + "/signin") as response:
            page = await response.text()
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf is not None
        async with client.post(live.console.url + "/signin", data={"token": token}) as response:
            assert response.status == 403
            assert "CSRF" in await response.text()
        form = {"token": token, "csrf": csrf[1]}
        async with client.post(
            live.console.url + "/signin", data=form, allow_redirects=False
        ) as response:
            assert response.status == 303
            assert response.headers["location"] == "/jobs"
        # Signed in, a state-changing form of the session without the token is refused, and
        # the token of the anonymous session before the sign-in no longer works.
        async with client.post(live.console.url + "/signout", data={}) as response:
            assert response.status == 403
        async with client.post(live.console.url + "/signout", data={"csrf": csrf[1]}) as response:
            assert response.status == 403


async def test_an_operator_token_opens_the_operators_pages_not_a_teams(
    live: Live, browser: Browser
) -> None:
    token = await live.operator()
    async with browser_page(browser) as page:
        await sign_in(page, live.console, token)
        await expect(page).to_have_url(live.console.url + "/operator/teams")
        await expect(page.locator("header .who")).to_contain_text("operator")
        await page.goto(live.console.url + "/jobs")
        await expect(page.locator("h1")).to_have_text("Not for this token")
