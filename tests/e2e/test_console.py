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
from datetime import timedelta

import asyncpg
import pytest
from playwright.async_api import Browser, Locator, Page, expect

from duetime.jobs.v1 import job_service_pb2, job_service_pb2_grpc, run_pb2
from duetime_infra.admin import create_operator_token, create_team
from testkit.console import (
    Console,
    browser_page,
    chromium,
    http_client,
    running_console,
    screenshot,
)
from testkit.databases import create_database, drop_database
from testkit.http_target import Behaviour, HttpTarget, http_target
from testkit.metrics import metrics_port
from testkit.polling import eventually
from testkit.system import System, http_job, running_system
from testkit.tls import service_channel

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


def fleet_metrics(system: System) -> dict[str, str]:
    """The console's fleet page reads every service's metrics endpoint."""
    services = [
        ("api", system.api_service),
        ("scheduler", system.scheduler),
        ("relay", system.relay),
        *(("worker", worker) for worker in system.workers.values()),
    ]
    targets = [f"{name}=http://127.0.0.1:{metrics_port(s)}/metrics" for name, s in services]
    return {"DUETIME_CONSOLE_METRICS": ",".join(targets)}


@pytest.fixture(scope="module")
async def live(template_db: str) -> AsyncIterator[Live]:
    """One system, target and console for the module; each test signs in as a team of its
    own."""
    name = f"duetime_t_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name, template=template_db)
    try:
        async with (
            http_target() as target,
            running_system(dsn, common_env={"DUETIME_METRICS_ADDRESS": "127.0.0.1:0"}) as system,
            running_console(system.api_service.address, fleet_metrics(system)) as console,
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


async def test_an_operator_sees_teams_quotas_tokens_and_the_fleet(
    live: Live, browser: Browser
) -> None:
    token = await live.operator()
    team, _ = await live.team("ops")
    async with browser_page(browser) as page:
        await sign_in(page, live.console, token)
        await expect(page).to_have_url(live.console.url + "/operator/teams")
        await expect(page.locator("header .who")).to_contain_text("operator")
        await expect(page.locator("#table")).to_contain_text(team)
        await screenshot(page, "operator-teams")

        # A team's quota: one limit of its own, the rest the platform's defaults.
        await page.get_by_role("link", name=team).click()
        await page.get_by_label("max_stored_jobs").fill("50")
        await page.get_by_role("button", name="Save the quota").click()
        await expect(page.get_by_role("status")).to_contain_text("Quota saved")
        row = page.locator("tr", has=page.locator("code", has_text="max_stored_jobs"))
        await expect(row).to_contain_text("team")
        await expect(page.get_by_label("max_stored_jobs")).to_have_value("50")

        # A token for the team: its secret shown once, and it signs in as the team.
        await page.get_by_label("Description").fill("console test")
        await page.get_by_role("button", name="Create token").click()
        secret = await page.get_by_label(re.compile("Secret of token")).input_value()
        assert secret
        await page.get_by_role("link", name="Done").click()
        await expect(page.locator("main")).to_contain_text("console test")
        assert secret not in await page.content()

        # A worker token bound to one fleet's worker ids.
        await page.goto(live.console.url + "/operator/tokens")
        await page.get_by_label("Role").select_option("WORKER")
        await page.get_by_label("Worker ids begin with").fill("fleet-a-")
        await page.get_by_role("button", name="Create token").click()
        await expect(page.locator("main")).to_contain_text("begin with fleet-a-")
        await page.get_by_role("link", name="Done").click()
        row = page.locator("#table tr", has_text="fleet-a-*")
        await expect(row).to_contain_text("WORKER")

        # The fleet: every partition owned by the one scheduler, the endpoints up.
        await page.get_by_role("link", name="Fleet").click()
        await refresh_until(page, page.locator(".card", has_text="1024 / 1024"))
        await expect(page.locator("#table tbody .state")).to_have_text(["UP"] * 4)
        await screenshot(page, "fleet")

        # An operator's token opens no team's pages.
        await page.goto(live.console.url + "/jobs")
        await expect(page.locator("h1")).to_have_text("Not for this token")

    async with browser_page(browser) as page:
        await sign_in(page, live.console, secret)
        await expect(page.locator("header .who")).to_contain_text(f"team {team}")
    assert secret not in live.console.log()


async def refresh_until(page: Page, locator: Locator, within: float = 30) -> None:
    """Clicks the page's Refresh (htmx swaps its table in place) until ``locator`` shows."""

    async def shown() -> bool:
        if await locator.count() > 0:
            return True
        await page.get_by_role("link", name="Refresh").click()
        await page.wait_for_load_state("networkidle")
        return await locator.count() > 0

    await eventually(shown, within, f"{locator} on {page.url}", interval=0.5)


async def test_a_team_runs_its_jobs_from_the_browser(live: Live, browser: Browser) -> None:
    """Sign in, create a job from the form and watch its run succeed, filter the runs, redrive
    a dead letter, pause a filtered set in bulk, sign out."""
    system, target = live.system, live.target
    ok_url = target.on("/console-ok", Behaviour(status=200))
    async with browser_page(browser) as page:
        await sign_in(page, live.console, system.team_token)
        await expect(page).to_have_url(live.console.url + "/jobs")

        # A job from the form: once, a second after it is made.
        await page.get_by_role("link", name="New job").click()
        await page.get_by_label("Name", exact=True).fill("console once")
        await page.get_by_label("Once, after a delay").check()
        await page.get_by_label("Delay", exact=True).fill("1s")
        await page.get_by_label("URL").fill(ok_url)
        await page.get_by_label("Method").select_option("GET")
        await page.get_by_label("Labels").fill("env=console, owner=tests")
        await screenshot(page, "job-new")
        await page.get_by_role("button", name="Create").click()
        await expect(page.get_by_role("status")).to_have_text("Created job console once.")
        await expect(page.locator("h1")).to_contain_text("console once")
        job_id = page.url.rsplit("/", 1)[1]
        succeeded = page.locator("#table .state", has_text="SUCCEEDED")
        await refresh_until(page, succeeded)
        assert target.calls_to("/console-ok")
        await screenshot(page, "job")

        # Its run's page: the attempt on the timeline, with the worker and the trace id.
        await page.locator("#table a").first.click()
        await expect(page.locator(".timeline")).to_contain_text("Attempt 1 SUCCEEDED")
        await expect(page.locator(".timeline")).to_contain_text("on w1")
        await expect(page.locator("dl.detail")).to_contain_text(re.compile(r"[0-9a-f]{32}"))
        await screenshot(page, "run")

        # A job that dead-letters (the target refuses with 400), redriven from the dead letters
        # once the target answers again.
        target.on("/console-bad", Behaviour(status=400))
        bad = http_job("console bad", target.url("/console-bad"), after=timedelta(0))
        bad = await system.api.create(bad)
        await page.get_by_role("link", name="Dead letters").click()
        dead = page.locator("#table tbody a", has_text="console bad")
        await refresh_until(page, dead)
        await screenshot(page, "dead-letters")
        target.on("/console-bad", Behaviour(status=200))
        await page.get_by_role("link", name="Redrive all that match…").click()
        await expect(page.locator("h1")).to_have_text("Redrive 1 dead-lettered run?")
        await page.get_by_role("button", name="Redrive 1 run").click()
        await expect(page.get_by_role("status")).to_have_text("Redrove 1 of 1 runs.")

        # The runs across the team, filtered by state.
        await page.get_by_role("link", name="Runs", exact=True).click()
        await page.get_by_label("State").select_option("SUCCEEDED")
        await page.get_by_role("button", name="Search").click()
        await expect(page).to_have_url(re.compile(r"/runs\?state=SUCCEEDED"))
        rows = page.locator("#table tbody tr")
        await refresh_until(page, rows.filter(has_text="console bad"))
        states = await page.locator("#table tbody .state").all_inner_texts()
        assert states
        assert set(states) == {"SUCCEEDED"}
        await screenshot(page, "runs")

        # Three jobs labelled for a bulk pause; the search finds them, the count comes first.
        for n in range(3):
            job = http_job(f"bulk {n}", ok_url, every=timedelta(hours=1))
            job.labels["batch"] = "nightly"
            await system.api.create(job)
        await page.get_by_role("link", name="Jobs").click()
        await page.get_by_label("Label").fill("batch=nightly")
        await page.get_by_role("button", name="Search").click()
        await expect(page.locator("#table tbody tr")).to_have_count(3)
        await screenshot(page, "jobs")
        await page.get_by_role("link", name="Pause all").click()
        await expect(page.locator("h1")).to_have_text("Pause 3 jobs?")
        await page.get_by_role("button", name="Pause 3 jobs").click()
        await expect(page.get_by_role("status")).to_have_text("Paused 3 of 3 jobs.")
        await expect(page.locator("#table tbody .state")).to_have_text(["PAUSED"] * 3)
        assert job_id  # the first job is untouched by the label's search

        await page.get_by_role("link", name="Quota").click()
        await expect(page.locator(".cards")).to_contain_text("Stored jobs")
        await screenshot(page, "quota")

        await page.get_by_role("button", name="Sign out").click()
        await expect(page).to_have_url(live.console.url + "/signin")


async def test_a_pause_with_a_note_then_why_an_occurrence_was_skipped_and_the_history(
    live: Live, browser: Browser
) -> None:
    """Pause a job with a note and see it on its pages; resume it, told first what becomes of
    the paused occurrences; ask why one of them did not run; read who changed what; preview an
    edit without saving it."""
    system, target = live.system, live.target
    job = http_job("ticker", target.url("/console-tick"), cron=("*/2 * * * * *", "UTC"))
    job = await system.api.create(job)
    async with browser_page(browser) as page:
        await sign_in(page, live.console, system.team_token)
        await page.goto(f"{live.console.url}/jobs/{job.job_id}")
        await page.get_by_role("link", name="Pause", exact=True).click()
        await page.get_by_label(re.compile("^Note")).fill("warehouse migration")
        await page.get_by_role("button", name="Pause").click()
        await expect(page.get_by_role("status")).to_have_text("Paused.")
        await expect(page.locator("#pause")).to_contain_text("“warehouse migration”")
        paused = (
            await system.api.stub.GetJob(
                job_service_pb2.GetJobRequest(name=job.name), metadata=system.api.metadata
            )
        ).job
        await page.get_by_role("link", name="Jobs").click()
        await expect(page.locator("#table")).to_contain_text("“warehouse migration”")

        # Occurrences go by while it is paused, past those claimed ahead before the pause (the
        # workers skip those): one is answered SKIPPED with no record yet, to be recorded.
        later = paused.pause.pause_time.ToDatetime() + timedelta(seconds=14)
        ask = job_service_pb2.ExplainOccurrenceRequest(job=job.name)
        ask.time.FromDatetime(later.replace(microsecond=0) + timedelta(seconds=later.second % 2))

        async def skipped_by_now() -> bool:
            answer = await system.api.stub.ExplainOccurrence(ask, metadata=system.api.metadata)
            skipped = answer.fate == job_service_pb2.OCCURRENCE_FATE_SKIPPED
            return skipped and not answer.HasField("run")

        await eventually(skipped_by_now, 30, "an occurrence skipped while paused")

        await page.goto(f"{live.console.url}/jobs/{job.job_id}")
        await page.get_by_role("link", name="Resume", exact=True).click()
        await expect(page.locator(".forecast")).to_contain_text("covered by the pause")
        await page.get_by_role("button", name="Resume").click()
        await expect(page.get_by_role("status")).to_contain_text("recorded SKIPPED")
        await expect(page.locator("#pause")).to_have_count(0)

        # The paused stretch is one SKIPPED record; from its page, why.
        await page.locator("#table tr", has_text="SKIPPED").get_by_role("link").first.click()
        await page.get_by_role("link", name="Why?").click()
        answer = page.locator(".answer")
        await expect(answer.locator("h2 .state")).to_have_text("SKIPPED")
        await expect(answer).to_contain_text("the job was paused")
        # The same question typed on the schedule's clock.
        await page.get_by_label(re.compile("A time on the clock")).fill(
            ask.time.ToDatetime().strftime("%Y-%m-%dT%H:%M:%S")
        )
        await page.get_by_role("button", name="Why?").click()
        await expect(answer.locator("h2 .state")).to_have_text("SKIPPED")
        await screenshot(page, "why")

        await page.goto(f"{live.console.url}/jobs/{job.job_id}/history")
        rows = page.locator("tbody tr")
        await expect(rows).to_have_count(3)
        await expect(rows.nth(0)).to_contain_text("RESUME")
        await expect(rows.nth(1)).to_contain_text("PAUSE")
        await expect(rows.nth(1)).to_contain_text("“warehouse migration”")
        await expect(rows.nth(2)).to_contain_text("CREATE")
        await expect(rows.nth(2)).to_contain_text("tokens/")
        await screenshot(page, "history")

        # An edit previewed: the next runs before and after, nothing saved.
        await page.goto(f"{live.console.url}/jobs/{job.job_id}/edit?mode=yaml")
        await page.get_by_label(re.compile("The job as YAML")).fill(
            "schedule: {cron: {expression: '0 3 * * *', timeZone: America/New_York}}\n"
        )
        await page.get_by_role("button", name="Preview the change").click()
        preview = page.locator(".preview")
        await expect(preview).to_contain_text("nothing is saved yet")
        await expect(preview.locator("section", has_text="After the change")).to_contain_text(
            "T03:00:00-0"
        )
        stored = await system.api.stub.GetJob(
            job_service_pb2.GetJobRequest(name=job.name), metadata=system.api.metadata
        )
        assert stored.job.schedule.cron.expression == "*/2 * * * * *"


async def test_a_backfill_is_counted_then_made_from_the_job_page_and_runs(
    live: Live, browser: Browser
) -> None:
    """On the job's page: a range typed on the schedule's clock, across New York's fall-back
    night (01:00 happens twice), counted first, then made; every backfilled run reaches the
    target once, with an idempotency key of its own."""
    system, target = live.system, live.target
    job = http_job(
        "hourly backfill", target.url("/console-backfill"), cron=("0 * * * *", "America/New_York")
    )
    job = await system.api.create(job)
    async with browser_page(browser) as page:
        await sign_in(page, live.console, system.team_token)
        await page.goto(f"{live.console.url}/jobs/{job.job_id}")
        await page.get_by_role("link", name="Backfill", exact=True).click()
        await expect(page.get_by_label("On the clock of")).to_have_value("America/New_York")
        await page.get_by_label("From (at or after)").fill("2025-11-01T08:00:00")
        await page.get_by_label("To (before)").fill("2025-11-02T19:00:00")
        await page.get_by_role("button", name="Count").click()
        count = page.locator("#count")
        await expect(count).to_have_text(
            "To backfill: 36 occurrences from 2025-11-01 12:00:00Z to 2025-11-02 23:00:00Z: 36 runs"
        )
        await screenshot(page, "backfill")
        assert target.calls_to("/console-backfill") == []  # a count makes nothing
        await page.get_by_role("button", name="Make 36 runs").click()
        await expect(page.get_by_role("status")).to_contain_text("Backfilled: 36 runs made")
        await expect(page.locator("#table")).to_contain_text("BACKFILL")

        # Counted again with SKIP_RAN, every occurrence has a run now.
        await page.goto(f"{live.console.url}/jobs/{job.job_id}/backfill")
        await page.get_by_label("From (at or after)").fill("2025-11-01T08:00:00")
        await page.get_by_label("To (before)").fill("2025-11-02T19:00:00")
        await page.get_by_label("Overlap").select_option("SKIP_RAN")
        await page.get_by_role("button", name="Count").click()
        await expect(count).to_contain_text("36 of them already ran: 0 runs")
        await expect(page.get_by_role("button", name=re.compile("^Make"))).to_have_count(0)

        # A range the API refuses is told on the form, naming what is wrong.
        await page.get_by_label("To (before)").fill("2025-10-01T00:00:00")
        await page.get_by_role("button", name="Count").click()
        await expect(page.get_by_role("alert")).to_contain_text("end_time")

    async def all_ran() -> bool:
        runs = [r for r in await system.api.runs(job) if r.backfill_request_id]
        return len(runs) == 36 and all(r.state == run_pb2.RUN_STATE_SUCCEEDED for r in runs)

    await eventually(all_ran, 60, "the 36 backfilled runs succeeded")
    keys = [c.headers.get("Idempotency-Key") for c in target.calls_to("/console-backfill")]
    assert len(keys) == len(set(keys)) == 36


async def test_a_job_made_to_end_from_the_form(live: Live, browser: Browser) -> None:
    """An interval job of at most two runs, previewed then made from the form: it runs twice
    and its page says it completed, and why; a cron job ending at a wall-clock time in its zone
    shows that end as an instant, and the edit form gives it back."""
    target = live.target
    _, token = await live.team("ends")
    url = target.on("/console-ends", Behaviour(status=200))
    async with browser_page(browser) as page:
        await sign_in(page, live.console, token)
        await page.get_by_role("link", name="New job").click()
        await page.get_by_label("Name", exact=True).fill("twice")
        await page.get_by_label("Every interval").check()
        await page.get_by_label("Interval", exact=True).fill("1s")
        await page.get_by_label("At most this many runs").fill("2")
        await page.get_by_label("URL").fill(url)
        await page.get_by_role("button", name="Preview the next runs").click()
        await expect(page.locator(".preview li")).to_have_count(2)
        await page.get_by_role("button", name="Create").click()
        await expect(page.get_by_role("status")).to_have_text("Created job twice.")
        await expect(page.locator("dl.detail")).to_contain_text("at most 2 runs")

        async def completed() -> bool:
            await page.reload()
            return await page.locator("#state-reason").count() > 0

        await eventually(completed, 30, "the job completed", interval=0.5)
        await expect(page.locator("h1 .state")).to_have_text("COMPLETED")
        await expect(page.locator("#state-reason")).to_have_text(
            "the schedule ended: it made 2 runs, max_runs is 2"
        )
        await expect(page.locator("#state-reason")).to_have_class("notice")
        await expect(page.locator("dl.detail")).to_contain_text("2 of at most 2")
        await eventually(lambda: len(target.calls_to("/console-ends")) >= 2, 30, "two calls")
        assert len(target.calls_to("/console-ends")) == 2

        # Noon in Paris on 2099-01-01 is 11:00Z; the edit form reads it back in the zone.
        await page.get_by_role("link", name="Jobs").click()
        await page.get_by_role("link", name="New job").click()
        await page.get_by_label("Name", exact=True).fill("until new year")
        await page.get_by_label("On a cron schedule").check()
        await page.get_by_label("Cron expression").fill("0 9 * * *")
        await page.get_by_label("Time zone").select_option("Europe/Paris")
        await page.get_by_label("Ends after").fill("2099-01-01T12:00")
        await page.get_by_label("URL").fill(url)
        await page.get_by_role("button", name="Create").click()
        await expect(page.get_by_role("status")).to_have_text("Created job until new year.")
        await expect(page.locator("dl.detail")).to_contain_text("until 2099-01-01 11:00:00Z")
        await page.get_by_role("link", name="Edit").click()
        await expect(page.get_by_label("Ends after")).to_have_value("2099-01-01T12:00")


async def test_another_teams_job_is_not_found(live: Live, browser: Browser) -> None:
    _, theirs = await live.team("theirs")
    _, mine = await live.team("mine")
    async with service_channel(live.system.api_service.address) as channel:
        stub = job_service_pb2_grpc.JobServiceStub(channel)
        job = http_job("theirs", live.target.url("/x"), every=timedelta(hours=1))
        created = await stub.CreateJob(
            job_service_pb2.CreateJobRequest(job=job),
            metadata=(("authorization", f"Bearer {theirs}"),),
        )
    job_id = created.job.job_id
    async with browser_page(browser) as page:
        await sign_in(page, live.console, mine)
        for path in (f"/jobs/{job_id}", f"/jobs/{job_id}/edit", f"/runs?job={job_id}"):
            response = await page.goto(live.console.url + path)
            assert response is not None
            assert response.status == 404, path
            await expect(page.locator("h1")).to_have_text("Not found")
        assert "theirs" not in await page.content()


def post_paths() -> list[str]:
    """Every POST route of the console, with ids filled in."""
    from starlette.routing import Route

    from duetime_console.app import routes

    ids = {
        "job_id": str(uuid.uuid4()),
        "run_id": str(uuid.uuid4()),
        "token_id": str(uuid.uuid4()),
        "calendar_id": "holidays",
    }
    paths = []
    for route in routes():
        if isinstance(route, Route) and route.methods and "POST" in route.methods:
            filled = route.path.format(action="pause", team_id="team-e2e", **ids)
            paths.append(filled)
    return paths


async def test_every_form_without_its_csrf_token_is_refused_signed_in(live: Live) -> None:
    paths = post_paths()
    assert len(paths) >= 12
    for token in (live.system.team_token, await live.operator()):
        async with http_client() as client:
            async with client.get(live.console.url + "/signin") as response:
                csrf = re.search(r'name="csrf" value="([^"]+)"', await response.text())
            assert csrf is not None
            form = {"token": token, "csrf": csrf[1]}
            async with client.post(live.console.url + "/signin", data=form) as response:
                assert response.status == 200
                page = await response.text()
            signed_in = re.search(r'name="csrf" value="([^"]+)"', page)
            assert signed_in is not None
            for path in paths:
                for sent in ({}, {"csrf": "forged"}, {"csrf": csrf[1]}):
                    async with client.post(
                        live.console.url + path, data=sent, allow_redirects=False
                    ) as response:
                        assert response.status == 403, (path, sent)
            # The header htmx sends is checked the same way.
            async with client.post(
                live.console.url + "/signout",
                headers={"X-CSRF-Token": signed_in[1]},
                allow_redirects=False,
            ) as response:
                assert response.status == 303


async def test_a_stale_edit_is_answered_clearly_and_kept(live: Live, browser: Browser) -> None:
    team, token = await live.team("edit")
    async with browser_page(browser) as page:
        await sign_in(page, live.console, token)
        await page.get_by_role("link", name="New job").click()
        await page.get_by_role("link", name="YAML or JSON").click()
        await page.get_by_label(re.compile("The job as YAML")).fill(
            "displayName: nightly report\n"
            "labels: {env: prod}\n"
            "schedule: {cron: {expression: '30 2 * * *', timeZone: America/New_York}}\n"
            "target: {http: {url: 'https://reports.internal/run',"
            " headers: {Authorization: Bearer s3cret}}}\n"
            "attemptTimeout: 90s\n"
        )
        await page.get_by_role("button", name="Create").click()
        await expect(page.get_by_role("status")).to_have_text("Created job nightly report.")
        job_id = page.url.rsplit("/", 1)[1]
        # The schedule in words with its zone; the secret header never shown.
        await expect(page.locator("dl.detail")).to_contain_text("At 02:30 (America/New_York)")
        assert "s3cret" not in await page.content()

        await page.get_by_role("link", name="Edit").click()
        await page.get_by_label("Name", exact=True).fill("nightly report v2")
        # Meanwhile someone else changes the job.
        async with service_channel(live.system.api_service.address) as channel:
            stub = job_service_pb2_grpc.JobServiceStub(channel)
            await stub.PauseJob(
                job_service_pb2.PauseJobRequest(name=f"teams/{team}/jobs/{job_id}"),
                metadata=(("authorization", f"Bearer {token}"),),
            )
        await page.get_by_role("button", name="Save").click()
        alert = page.get_by_role("alert")
        await expect(alert).to_contain_text("Not saved: this job changed since you opened it.")
        await expect(page.get_by_label("Name", exact=True)).to_have_value("nightly report v2")

        # From the current version, the edit is saved; the stored header keeps its value.
        await page.get_by_role("link", name="open the current version").click()
        await page.get_by_label("Name", exact=True).fill("nightly report v2")
        await page.get_by_role("button", name="Save").click()
        await expect(page.get_by_role("status")).to_contain_text("Saved. Schedule unchanged")
        await expect(page.locator("h1")).to_contain_text("nightly report v2")
        await expect(page.locator("h1")).to_contain_text("PAUSED")


async def test_the_pages_work_without_javascript(live: Live, browser: Browser) -> None:
    _, token = await live.team("nojs")
    context = await browser.new_context(ignore_https_errors=True, java_script_enabled=False)
    try:
        page = await context.new_page()
        await sign_in(page, live.console, token)
        await page.get_by_role("link", name="New job").click()
        await page.get_by_label("Name", exact=True).fill("plain forms")
        await page.get_by_label("Every interval").check()
        await page.get_by_label("Interval", exact=True).fill("1h")
        await page.get_by_label("URL").fill(live.target.url("/nojs"))
        await page.get_by_role("button", name="Create").click()
        await expect(page.get_by_role("status")).to_have_text("Created job plain forms.")
        await page.get_by_role("link", name="Trigger").click()
        await expect(page.locator("h1")).to_have_text("Trigger “plain forms”?")
        await page.get_by_role("button", name="Trigger").click()
        await expect(page.get_by_role("status")).to_have_text("Triggered: this run is new.")
        await expect(page.locator("h1")).to_contain_text("Run of plain forms")
        # The search is a plain GET form; Refresh a plain link to the same page.
        await page.get_by_role("link", name="Jobs").click()
        await page.get_by_label("Name contains").fill("plain")
        await page.get_by_role("button", name="Search").click()
        await expect(page).to_have_url(re.compile(r"/jobs\?q=plain"))
        await expect(page.locator("#table tbody tr")).to_have_count(1)
    finally:
        await context.close()
