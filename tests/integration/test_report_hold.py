"""The success of an attempt started ahead waits while another call whose time has come has
not gone out yet (a herd's calls still being made), and goes once it has, or once the longest
hold has passed. Against a real WorkerService on PostgreSQL and real HTTP targets; one pooled
connection per target host makes a call wait for its host's connection."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from duetime_core.attempts import AttemptSettings
from duetime_worker.attempt.executor import Executor
from duetime_worker.attempt.heartbeats import Heartbeats
from duetime_worker.herd import governor
from duetime_worker.targets.container.launcher import DisabledLauncher
from duetime_worker.targets.http.allow_list import TargetPolicy
from duetime_worker.targets.http.caller import HttpCaller
from testkit.api import ApiClient, running_api
from testkit.http_target import Behaviour, HttpTarget, http_target
from testkit.polling import eventually, throughout
from testkit.worker_api import WorkerClient, create_job, job_message, running_worker_api
from tests.integration.test_worker_attempts import Answer, due_at

pytestmark = pytest.mark.timeout(60)

WORKER = "w-hold"


@dataclass
class Env:
    api: ApiClient
    w: WorkerClient
    busy: HttpTarget  # its one connection held by a slow call, another call waiting for it
    quick: HttpTarget
    executor: Executor


@pytest.fixture
async def env(db_dsn: str) -> AsyncIterator[Env]:
    async with (
        running_api(db_dsn) as api,
        running_worker_api(db_dsn, AttemptSettings(lease=timedelta(seconds=30))) as w,
        http_target() as busy,
        http_target() as quick,
    ):
        metadata = (("authorization", f"Bearer {w.token}"),)
        herd = governor.Herd()
        heartbeats = Heartbeats(w.stub, WORKER, metadata, interval=0.3, herd=herd)
        http = HttpCaller(TargetPolicy.parse(["127.0.0.1"]), connections_per_host=1)
        await http.start()
        stopping = asyncio.Event()
        beating = asyncio.create_task(heartbeats.run(stopping))
        executor = Executor(
            w.stub, WORKER, metadata, heartbeats, http, DisabledLauncher(), herd=herd, early=10
        )
        try:
            yield Env(api, w, busy, quick, executor)
        finally:
            stopping.set()
            await beating
            await http.close()


async def run_of(
    env: Env, target: HttpTarget, path: str, behaviour: Behaviour, at: datetime
) -> uuid.UUID:
    job = job_message(attempt_timeout=timedelta(seconds=20))
    job.target.http.url = target.on(path, behaviour)
    created = await create_job(env.api, job)
    return await env.w.queue_scheduled_run(created.job_id, at)


@dataclass
class Herd:
    release: asyncio.Event
    quick: uuid.UUID
    processing: list[asyncio.Task[None]]


async def herd(env: Env) -> Herd:
    """Three runs started ahead: a slow one due first holds the busy host's connection, then a
    call to that host waits for it while a quick call to another host is answered."""
    release = asyncio.Event()
    first = await env.w.now() + timedelta(seconds=1.5)
    then = first + timedelta(seconds=0.7)
    runs = [
        await run_of(env, env.busy, "/slow", Behaviour(hold=release), first),
        await run_of(env, env.busy, "/waits", Behaviour(), then),
        await run_of(env, env.quick, "/quick", Behaviour(), then),
    ]
    times = [first, then, then]
    processing = [
        asyncio.create_task(env.executor.process(due_at(r, t), f"d-{i}", Answer()))
        for i, (r, t) in enumerate(zip(runs, times, strict=True))
    ]
    await eventually(lambda: bool(env.quick.calls_to("/quick")), 10, "the quick call answered")
    assert env.busy.calls_to("/slow")
    assert not env.busy.calls_to("/waits")
    return Herd(release, runs[2], processing)


async def state_of(env: Env, run_id: uuid.UUID) -> str:
    return str((await env.w.run_row(run_id))["state"])


async def test_a_success_waits_until_the_calls_due_have_gone_out(env: Env) -> None:
    h = await herd(env)
    try:
        await throughout(
            lambda: _is(env, h.quick, "RUNNING"), 1.0, "the quick run's success is held"
        )
    finally:
        h.release.set()
    await asyncio.wait_for(asyncio.gather(*h.processing), 20)
    assert env.busy.calls_to("/waits")
    (attempt,) = await env.w.attempts(h.quick)
    assert attempt["outcome"] == "SUCCEEDED"
    assert await state_of(env, h.quick) == "SUCCEEDED"


async def test_a_success_waits_no_longer_than_the_longest_hold(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(governor, "REPORT_HOLD", 1.0)
    h = await herd(env)
    answered = time.monotonic()
    try:
        await eventually(lambda: _is(env, h.quick, "SUCCEEDED"), 10, "the quick run reported")
        held = time.monotonic() - answered
        assert not env.busy.calls_to("/waits")  # the backlog never cleared
    finally:
        h.release.set()
    assert held >= 0.8
    await asyncio.wait_for(asyncio.gather(*h.processing), 20)


async def _is(env: Env, run_id: uuid.UUID, state: str) -> bool:
    return await state_of(env, run_id) == state
