"""``duetime`` against the whole system (api, scheduler, relay, worker as processes) and a real
HTTP target: ``jobs trigger --wait`` follows a run to SUCCEEDED (through WAITING when its
team's quota holds it), or exits 10 when it is dead-lettered; ``runs list|get`` show it;
``runs redrive`` brings it back."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from duetime.jobs.v1 import job_pb2, run_pb2
from duetime_client.describe import parse_duration
from testkit.cli import Cli, Result, cli_env, duetime_command, operator_token
from testkit.databases import create_database, drop_database
from testkit.http_target import Behaviour, HttpTarget, http_target
from testkit.polling import eventually
from testkit.system import TEAM, System, running_system
from testkit.terminal import screen_detail, screen_table, terminal

pytestmark = pytest.mark.timeout(180)

JOB_YAML = """\
displayName: on demand
schedule:
  at:
    runTime: "2099-01-01T00:00:00Z"  # never due here: runs come from triggers
target:
  http:
    url: {url}
retryPolicy:
  maxAttempts: 2
  initialBackoff: 0.1s
  maxBackoff: 0.2s
attemptTimeout: 10s
"""


@pytest.fixture(scope="module")
async def target() -> AsyncIterator[HttpTarget]:
    async with http_target() as server:
        yield server


@pytest.fixture(scope="module")
async def system(template_db: str) -> AsyncIterator[System]:
    name = f"duetime_t_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name, template=template_db)
    try:
        async with running_system(dsn) as running:
            yield running
    finally:
        await drop_database(name)


@pytest.fixture
def cli(system: System) -> Cli:
    return Cli(system.api_service.address, system.team_token, TEAM)


async def create_job(cli: Cli, tmp_path: Path, url: str) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(JOB_YAML.format(url=url))
    created = await cli.ok("jobs", "create", "-f", str(path), "-o", "json")
    job_id: str = created.json()["job"]["jobId"]
    return job_id


def milestones(result: Result) -> list[str]:
    """The lines ``--wait`` printed as the run went, without their times."""
    return [m[1] for m in re.finditer(r"^ +\d+\.\ds  (.+)$", result.stderr, re.M)]


async def test_trigger_wait_follows_the_run_to_succeeded(
    cli: Cli, target: HttpTarget, tmp_path: Path
) -> None:
    job_id = await create_job(cli, tmp_path, target.on("/ok", Behaviour()))

    followed = await cli("jobs", "trigger", job_id, "--wait", "--request-id", "by-hand-1")
    assert followed.code == 0, followed
    assert followed.stderr.startswith(f"following teams/{TEAM}/jobs/{job_id}/runs/")
    assert milestones(followed) == [
        "QUEUED",
        "RUNNING attempt 1 on w1",
        "attempt 1 SUCCEEDED",
        "SUCCEEDED",
    ]
    shown = followed.detail()
    assert shown["State"] == "SUCCEEDED"
    assert shown["Origin"] == "TRIGGER"
    assert shown["Idempotency key"] == f"{job_id}/trigger/by-hand-1"
    (call,) = target.calls_to("/ok")
    assert call.headers["Idempotency-Key"] == f"{job_id}/trigger/by-hand-1"

    # For scripts: stdout holds only the final run, as JSON; the progress went to stderr.
    scripted = await cli("jobs", "trigger", job_id, "--wait", "-o", "json")
    assert scripted.code == 0, scripted
    run = scripted.json()["run"]
    assert run["state"] == "RUN_STATE_SUCCEEDED"
    assert [a["outcome"] for a in run["attempts"]] == ["ATTEMPT_OUTCOME_SUCCEEDED"]
    assert "SUCCEEDED" in milestones(scripted)

    listed = await cli.ok("runs", "list", job_id)
    header, _, *rows = listed.stdout.splitlines()
    assert header.split()[:4] == ["RUN", "ID", "NOMINAL", "(UTC)"]
    assert [row.split()[0] for row in rows] == [run["runId"], shown["Name"].rsplit("/", 1)[1]]
    assert all(row.split()[3:6] == ["TRIGGER", "SUCCEEDED", "1"] for row in rows), rows


async def test_a_dead_lettered_run_exits_10_and_redrive_brings_it_back(
    cli: Cli, system: System, target: HttpTarget, tmp_path: Path
) -> None:
    job_id = await create_job(cli, tmp_path, target.on("/down", Behaviour(status=500)))

    failed = await cli("jobs", "trigger", job_id, "--wait")
    assert failed.code == 10, failed
    steps = milestones(failed)
    assert steps[:2] == ["QUEUED", "RUNNING attempt 1 on w1"]
    assert steps[2].startswith("attempt 1 FAILED: ")
    assert steps[3] == "RUNNING attempt 2 on w1"
    assert steps[4].startswith("attempt 2 FAILED: ")
    assert steps[5].startswith("DEAD_LETTERED")
    assert len(steps) == 6, steps
    assert failed.detail()["State"] == "DEAD_LETTERED"

    dead = await cli.ok("runs", "list", job_id, "--state", "dead_lettered", "-o", "json")
    (run,) = dead.json()["runs"]
    run_id = run["runId"]
    shown = await cli.ok("runs", "get", job_id, run_id)
    assert shown.detail()["State"] == "DEAD_LETTERED"
    attempts = [line.split() for line in shown.stdout.splitlines() if re.match(r"^[12] ", line)]
    assert [(a[0], a[5], a[6]) for a in attempts] == [("1", "FAILED", "w1"), ("2", "FAILED", "w1")]

    # The target is fixed; the run goes back to the queue with a fresh attempt budget.
    target.on("/down", Behaviour())
    redriven = await cli.ok("runs", "redrive", job_id, run_id)
    assert redriven.detail()["State"] == "QUEUED"

    job = job_pb2.Job(name=f"teams/{TEAM}/jobs/{job_id}")

    async def succeeded() -> bool:
        return [r.state for r in await system.api.runs(job)] == [run_pb2.RUN_STATE_SUCCEEDED]

    await eventually(succeeded, 30, "the redriven run SUCCEEDED")
    name = f"teams/{TEAM}/jobs/{job_id}/runs/{run_id}"
    final = (await cli.ok("runs", "get", name, "-o", "json")).json()["run"]
    assert [(a["number"], a["outcome"]) for a in final["attempts"]] == [
        (1, "ATTEMPT_OUTCOME_FAILED"),
        (2, "ATTEMPT_OUTCOME_FAILED"),
        (3, "ATTEMPT_OUTCOME_SUCCEEDED"),
    ]
    again = await cli("runs", "redrive", name)
    assert again.code == 6, again
    assert again.stderr.startswith("Error: FAILED_PRECONDITION (")


async def test_wait_gives_up_after_its_timeout(
    cli: Cli, target: HttpTarget, tmp_path: Path
) -> None:
    """A target that does not answer: the command stops waiting (exit 9) and says how to look
    at the run later."""
    held = asyncio.Event()
    job_id = await create_job(cli, tmp_path, target.on("/held", Behaviour(hold=held)))
    try:
        waited = await cli("jobs", "trigger", job_id, "--wait", "--timeout", "1")
    finally:
        held.set()
    assert waited.code == 9, waited
    # How far the run got in that second depends on the machine's load.
    assert milestones(waited) in (["QUEUED"], ["QUEUED", "RUNNING attempt 1 on w1"])
    assert re.search(
        r"Error: DEADLINE_EXCEEDED: stopped waiting after 1s with the run (QUEUED|RUNNING); "
        r"it goes on: "
        rf"duetime runs get teams/{TEAM}/jobs/{job_id}/runs/[0-9a-f-]+\n$",
        waited.stderr,
    ), waited.stderr


async def test_wait_follows_a_run_its_quota_holds_until_it_is_released(
    cli: Cli, system: System, target: HttpTarget, tmp_path: Path
) -> None:
    """With max_running=1 and a run in flight, a triggered run is WAITING (QUOTA: max_running)
    until the first ends: --wait says so, then follows it to SUCCEEDED, and the run shows how
    long its quota held it."""
    operator = Cli(cli.api, cli.token, TEAM, await operator_token(system.db_dsn))
    release = asyncio.Event()
    busy = await create_job(cli, tmp_path, target.on("/busy", Behaviour(hold=release)))
    quick = await create_job(cli, tmp_path, target.on("/quick", Behaviour()))
    await operator.ok("admin", "quotas", "set", TEAM, "max_running=1")
    try:
        await cli.ok("jobs", "trigger", busy)
        waiting = asyncio.create_task(cli("jobs", "trigger", quick, "--wait", "--timeout", "60"))
        job = job_pb2.Job(name=f"teams/{TEAM}/jobs/{quick}")

        async def held() -> bool:
            return [r.state for r in await system.api.runs(job)] == [run_pb2.RUN_STATE_WAITING]

        await eventually(held, 30, "the second job's run is held by max_running")
        release.set()
        followed = await waiting
    finally:
        release.set()
        await operator.ok("admin", "quotas", "reset", TEAM, "max_running")
    assert followed.code == 0, followed
    assert milestones(followed) == [
        "WAITING QUOTA: max_running",
        "QUEUED",
        "RUNNING attempt 1 on w1",
        "attempt 1 SUCCEEDED",
        "SUCCEEDED",
    ]
    shown = followed.detail()
    assert (shown["State"], shown["Quota limit"]) == ("SUCCEEDED", "max_running")
    assert parse_duration(shown["Quota delay"]).ToTimedelta() > timedelta(0)
    assert shown["Eligible time"] > shown["Effective time"]  # one format: as text, in order


async def test_tables_fit_80_and_120_columns(cli: Cli, tmp_path: Path) -> None:
    """`jobs list`, `runs list` and `runs get` of a run dead-lettered with a long error, read
    off a real terminal 80 and 120 columns wide: ids and states whole, every heading on its
    line, free text wrapped between words, less important columns dropped instead."""
    job_id = await create_job(cli, tmp_path, "http://127.0.0.1:1/closed")  # refused: long error
    failed = await cli("jobs", "trigger", job_id, "--wait", "-o", "json")
    assert failed.code == 10, failed
    run = failed.json()["run"]
    assert run["state"] == "RUN_STATE_DEAD_LETTERED"
    error = run["attempts"][-1]["error"]
    assert len(error.split()) > 5, error
    name = f"teams/{TEAM}/jobs/{job_id}/runs/{run['runId']}"
    commands = (["jobs", "list"], ["runs", "list", job_id], ["runs", "get", name])
    script = " && echo && ".join(f"{duetime_command()} {' '.join(args)}" for args in commands)
    for width in (80, 120):
        async with terminal() as term:
            await term.start(script, cli_env(cli.api, cli.token), width)
            screen = await term.finished()
        assert "exit 0" in screen, screen
        # Past the width only an id, whole on its line for the terminal to wrap (the -J
        # capture joins it again).
        wider = [line for line in screen if len(line) > width]
        assert all(re.fullmatch(r"\S.*?\s{2,}\S+", line) for line in wider), wider

        heads, jobs = screen_table(screen, "JOB ID")
        assert {"JOB ID", "NAME", "STATE"} <= set(heads), (width, heads)
        (job,) = [row for row in jobs if row["JOB ID"] == job_id]
        assert (job["NAME"], job["STATE"]) == ("on demand", "ACTIVE")

        heads, runs = screen_table(screen, "RUN ID")
        assert {"RUN ID", "STATE"} <= set(heads), (width, heads)
        assert [(r["RUN ID"], r["STATE"]) for r in runs] == [(run["runId"], "DEAD_LETTERED")]
        if width == 120:  # room for why, wrapped between its words
            assert runs[0]["REASON"] == f"ATTEMPTS_EXHAUSTED: {run['reasonDetail']}", runs

        shown = screen_detail(screen, "Name")
        assert (shown["Name"], shown["State"]) == (name, "DEAD_LETTERED")
        assert shown["Reason"] == f"ATTEMPTS_EXHAUSTED: {run['reasonDetail']}"
        heads, attempts = screen_table(screen, "ATTEMPT")
        assert {"ATTEMPT", "OUTCOME", "ERROR"} <= set(heads), (width, heads)
        assert attempts[-1]["ERROR"] == " ".join(error.split())
