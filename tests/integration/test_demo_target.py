"""The demos' stand-in target (scripts/lib/demo_target.py) answers 2xx to every method a job's
HttpTarget may name, POST (the default) first: a team's program pointed at the demo gets its
runs SUCCEEDED, not dead-lettered with 501."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncIterator

import aiohttp
import pytest

from duetime.jobs.v1 import job_pb2
from testkit.processes import REPO

pytestmark = pytest.mark.timeout(30)

SCRIPT = REPO / "scripts" / "lib" / "demo_target.py"


@pytest.fixture
async def demo_target() -> AsyncIterator[tuple[str, asyncio.StreamReader]]:
    """The target on a free port: its URL, and its log (stderr) after the first line."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(SCRIPT), "0", stderr=asyncio.subprocess.PIPE
    )
    assert process.stderr is not None
    try:
        first = (await asyncio.wait_for(process.stderr.readline(), 10)).decode()
        listening = re.fullmatch(r"listening on (127\.0\.0\.1:\d+)\n", first)
        assert listening, first
        yield f"http://{listening[1]}/", process.stderr
    finally:
        process.terminate()
        await process.wait()


async def test_every_job_method_is_answered_200(
    demo_target: tuple[str, asyncio.StreamReader],
) -> None:
    url, log = demo_target
    methods = [
        value.name.removeprefix("HTTP_METHOD_")
        for value in job_pb2.HttpMethod.DESCRIPTOR.values
        if value.number != job_pb2.HTTP_METHOD_UNSPECIFIED
    ]
    assert "POST" in methods
    async with aiohttp.ClientSession() as session:
        for method in methods:
            async with session.request(method, url, data=b"{}") as response:
                assert response.status == 200, method
            line = (await asyncio.wait_for(log.readline(), 5)).decode()
            assert f'"{method} / HTTP/1.1" 200' in line, line
