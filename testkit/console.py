"""The console in tests: its process against a running API (as deployed: HTTPS with the
stack's certificate, the API reached over TLS), a real browser (Debian's chromium driven by
Playwright, no browser download), and screenshots for the docs.

Screenshots of the main pages are written to ``docs/console/`` only when
``DUETIME_SCREENSHOTS=1``, so a test run leaves the tree as it was.
"""

from __future__ import annotations

import os
import shutil
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
from playwright.async_api import Browser, Page, async_playwright

from duetime_infra.secrets.keyring import new_keyring
from testkit.processes import REPO, Service, service
from testkit.tls import service_client_tls

SCREENSHOTS = REPO / "docs" / "console"
# A headless Chromium on these machines: without the networking flags its connections are
# refused (TOOLCHAIN.md).
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class Console:
    process: Service

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.process.port}"

    def log(self) -> str:
        return "\n".join(self.process.output)


def console_env(api_address: str, extra: Mapping[str, str] = {}) -> dict[str, str]:
    return {
        "DUETIME_CONSOLE_ADDRESS": "127.0.0.1:0",
        "DUETIME_CONSOLE_API": api_address,
        "DUETIME_CONSOLE_SESSION_KEYS": new_keyring("t1").to_json(),
        "DUETIME_SHUTDOWN_GRACE_SECONDS": "1",
        **extra,
    }


@asynccontextmanager
async def running_console(
    api_address: str, extra: Mapping[str, str] = {}
) -> AsyncIterator[Console]:
    env = console_env(api_address, extra)
    async with service("duetime_console", env, "DUETIME_CONSOLE_PORT") as process:
        yield Console(process)
    # An unexpected exception in one of its pages (answered 500) fails the test.
    failed = [line for line in process.output if '"level": "ERROR"' in line]
    assert not failed, "the console failed unexpectedly:\n" + "\n".join(failed)[:6000]


def client_ssl() -> ssl.SSLContext:
    """Verifies the console's certificate with the stack's CA, as a browser that trusts it."""
    tls = service_client_tls()
    assert tls is not None, "the console serves HTTPS: the tests need the stack's CA"
    return ssl.create_default_context(cafile=tls.ca_file)


@asynccontextmanager
async def http_client() -> AsyncIterator[aiohttp.ClientSession]:
    """A cookie-keeping HTTP client, for what a browser cannot be made to do (a forged POST)."""
    jar = aiohttp.CookieJar(unsafe=True)  # 127.0.0.1 is an IP address
    connector = aiohttp.TCPConnector(ssl=client_ssl())
    async with aiohttp.ClientSession(cookie_jar=jar, connector=connector) as client:
        yield client


def chromium_path() -> str:
    found = shutil.which("chromium")
    if found is None:
        pytest.skip("chromium is not installed (scripts/tools installs it as root)")
    return found


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """Debian's chromium, headless, through Playwright's driver."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=chromium_path(), args=CHROMIUM_FLAGS
        )
        try:
            yield browser
        finally:
            await browser.close()


@asynccontextmanager
async def browser_page(browser: Browser, zone: str = "Europe/Paris") -> AsyncIterator[Page]:
    """A fresh browser profile (its own cookies) in ``zone``. The console's certificate is
    signed by the stack's throwaway CA, which this profile does not know: its errors are
    ignored, and the tests that check the certificate do so with ``client_ssl``."""
    context = await browser.new_context(
        ignore_https_errors=True,
        timezone_id=zone,
        viewport={"width": 1360, "height": 860},
        locale="en-GB",
    )
    try:
        page = await context.new_page()
        page.set_default_timeout(15_000)
        yield page
    finally:
        await context.close()


async def screenshot(page: Page, name: str) -> None:
    """``docs/console/<name>.png`` when DUETIME_SCREENSHOTS=1 (for the docs), else nothing."""
    if os.environ.get("DUETIME_SCREENSHOTS") != "1":
        return
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(Path(SCREENSHOTS, f"{name}.png")), full_page=True)
