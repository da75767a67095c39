"""``duetime`` finding and acting on many against the API process: jobs by label and AIP-160
filter, the runs of every job of a team by state and scheduled time, and batch pause, resume
and redrive, counted first and asked about, each item's outcome shown. Dead letters are made
in the database, as no worker runs here."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from duetime.jobs.v1 import job_service_pb2
from testkit.cli import (
    Cli,
    Result,
    api_on_own_database,
    api_response,
    cli_env,
    duetime_command,
    team_cli,
)
from testkit.polling import eventually
from testkit.terminal import screen_table, terminal

pytestmark = pytest.mark.timeout(120)

JOB_YAML = """\
displayName: {name}
schedule:
  interval:
    interval: 1h
    startTime: "2099-01-01T00:00:00Z"
target:
  http:
    url: https://billing.internal/run
"""


@dataclass(frozen=True)
class Team:
    cli: Cli
    dsn: str
    tmp: Path

    async def job(self, name: str, labels: dict[str, str] | None = None) -> str:
        """A job made from a job file (its labels in it); its id."""
        path = self.tmp / f"{uuid.uuid4().hex}.yaml"
        text = JOB_YAML.format(name=name)
        if labels:
            text += "labels:\n" + "".join(f"  {k}: {v!r}\n" for k, v in labels.items())
        path.write_text(text)
        created = await self.cli.ok("jobs", "create", "-f", str(path), "-o", "json")
        job_id: str = created.json()["job"]["jobId"]
        return job_id

    async def trigger(self, job_id: str) -> str:
        """A run of the job, QUEUED (no scheduler or worker here); its id."""
        run = await self.cli.ok("jobs", "trigger", job_id, "-o", "json")
        run_id: str = run.json()["run"]["runId"]
        return run_id

    async def sql(self, query: str, *args: object) -> None:
        conn = await asyncpg.connect(self.dsn)
        try:
            await conn.execute(query, *args)
        finally:
            await conn.close()

    async def dead_letter(self, run_id: str) -> None:
        await self.sql(
            "UPDATE runs SET state = 'DEAD_LETTERED', attempt = 2, "
            "reason = 'ATTEMPTS_EXHAUSTED', reason_detail = 'connection refused' "
            "WHERE run_id = $1",
            uuid.UUID(run_id),
        )

    async def schedule_at(self, run_id: str, when: datetime) -> None:
        """Moves the run's scheduled (nominal) time, as if it had been due then."""
        await self.sql(
            "UPDATE runs SET nominal_time = $2, effective_time = $2 WHERE run_id = $1",
            uuid.UUID(run_id),
            when,
        )

    async def states(self, *run_ids: str) -> list[str]:
        listed = await self.cli.ok("runs", "list", "--limit", "0", "-o", "json")
        found = {r["runId"]: r["state"].removeprefix("RUN_STATE_") for r in listed.json()["runs"]}
        return [found[run_id] for run_id in run_ids]


@pytest.fixture(scope="module")
async def api(template_db: str) -> AsyncIterator[tuple[str, str]]:
    async with api_on_own_database(template_db) as running:
        yield running


@pytest.fixture
async def team(api: tuple[str, str], tmp_path: Path) -> Team:
    address, dsn = api
    return Team(await team_cli(dsn, address, f"team-{uuid.uuid4().hex[:8]}"), dsn, tmp_path)


def ids(result: Result, field: str, key: str) -> list[str]:
    return [item[key] for item in result.json().get(field, [])]


async def test_jobs_by_label_and_filter(team: Team) -> None:
    cli = team.cli
    invoices = await team.job("invoices", {"env": "prod", "tier": "gold"})
    sync = await team.job("sync", {"env": "dev"})
    report = await team.job("report", {"env": "prod", "owner": ""})
    plain = await team.job("plain")
    await cli.ok("jobs", "pause", report)

    prod, both, key_alone, with_state, typed, mixed, everyone = await asyncio.gather(
        cli.ok("jobs", "list", "--label", "env=prod", "-o", "json"),
        cli.ok("jobs", "list", "--label", "env=prod", "--label", "tier", "-o", "json"),
        cli.ok("jobs", "list", "--label", "owner", "-o", "json"),
        cli.ok("jobs", "list", "--label", "env=prod", "--state", "paused", "-o", "json"),
        cli.ok("jobs", "list", "--filter", "labels.env = prod AND state = ACTIVE", "-o", "json"),
        cli.ok("jobs", "list", "--label", "env=dev", "--filter", "sync OR report", "-o", "json"),
        cli.ok("jobs", "list", "-o", "json"),
    )
    assert ids(prod, "jobs", "jobId") == [report, invoices]  # newest first
    assert ids(both, "jobs", "jobId") == [invoices]
    assert ids(key_alone, "jobs", "jobId") == [report]
    assert ids(with_state, "jobs", "jobId") == [report]
    assert ids(typed, "jobs", "jobId") == [invoices]
    assert ids(mixed, "jobs", "jobId") == [sync]
    assert ids(everyone, "jobs", "jobId") == [plain, report, sync, invoices]
    # Exactly the API's answer to the filter the options make.
    request = job_service_pb2.ListJobsRequest(filter='labels.env = "prod"')
    assert prod.json() == await api_response(cli, "ListJobs", request)

    # People see the labels in the list and in one job.
    table, shown, unlabelled = await asyncio.gather(
        cli.ok("jobs", "list", "--label", "env"),
        cli.ok("jobs", "get", invoices),
        cli.ok("jobs", "get", plain),
    )
    rows = {row["JOB ID"]: row["LABELS"] for row in table.table("JOB ID")}
    assert rows == {report: "env=prod, owner=", sync: "env=dev", invoices: "env=prod, tier=gold"}
    assert shown.detail()["Labels"] == "env=prod, tier=gold"
    assert unlabelled.detail()["Labels"] == "-"
    # A list with no labels in it has no LABELS column.
    assert "LABELS" not in (await cli.ok("jobs", "list", "--filter", "plain")).stdout


async def test_a_bad_filter_names_the_token_and_what_was_sent(team: Team) -> None:
    cli = team.cli
    typed, composed, scripted, label, batch = await asyncio.gather(
        cli("jobs", "list", "--filter", "display_name = = x"),
        cli("jobs", "list", "--label", "env=prod", "--filter", "colour = red"),
        cli("runs", "list", "--filter", 'nominal_time > "May"', "-o", "json"),
        cli("jobs", "list", "--label", "a b=c"),
        cli("jobs", "pause", "--filter", "state = SLEEPING", "--yes"),
    )
    assert (typed.code, typed.stderr) == (
        3,
        'Error: INVALID_ARGUMENT\n  filter: unexpected "=" at column 16\n',
    )
    # Put together from options, the filter sent is told: the column is in it.
    assert composed.code == 3, composed
    first, violation, hint = composed.stderr.splitlines()
    assert first == "Error: INVALID_ARGUMENT"
    assert violation.startswith('  filter: unknown field "colour"'), violation
    assert hint == '  (the filter sent: labels.env = "prod" AND (colour = red))'
    assert scripted.code == 3
    (found,) = scripted.error()["fieldViolations"]
    assert found["field"] == "filter"
    assert "not an RFC 3339 time" in found["description"]
    # A label that would change the filter's shape is the command line's mistake.
    assert label.code == 2, label
    assert "Invalid value for --label: 'a b=c': key=value, or a key alone" in label.stderr
    assert batch.code == 3, batch
    assert '"SLEEPING" is not one of' in batch.stderr


async def test_the_runs_of_every_job_by_state_and_scheduled_time(team: Team) -> None:
    cli = team.cli
    first, second = await team.job("first"), await team.job("second")
    old, dead = await team.trigger(first), await team.trigger(first)
    other_dead, recent = await team.trigger(second), await team.trigger(second)
    now = datetime.now(UTC)
    await team.schedule_at(old, now - timedelta(days=3))
    await team.schedule_at(dead, now - timedelta(days=1))
    await team.schedule_at(other_dead, now - timedelta(days=2))
    for run_id in (dead, other_dead):
        await team.dead_letter(run_id)
    day_ago = (now - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    every, table, by_state, since, until, between, typed, one_job = await asyncio.gather(
        cli.ok("runs", "list", "-o", "json"),
        cli.ok("runs", "list"),
        cli.ok("runs", "list", "--state", "dead_lettered", "-o", "json"),
        cli.ok("runs", "list", "--since", "36h", "-o", "json"),
        cli.ok("runs", "list", "--until", "2d12h", "-o", "json"),
        cli.ok("runs", "list", "--since", "2d12h", "--until", day_ago, "-o", "json"),
        cli.ok("runs", "list", "--filter", f'state = DEAD_LETTERED AND nominal_time >= "{day_ago}"',
               "-o", "json"),
        cli.ok("runs", "list", first, "--filter", "state = QUEUED", "-o", "json"),
    )  # fmt: skip
    assert ids(every, "runs", "runId") == [recent, dead, other_dead, old]  # latest first
    request = job_service_pb2.ListRunsRequest(parent=f"teams/{cli.team}/jobs/-", page_size=20)
    assert every.json() == await api_response(cli, "ListRuns", request)
    # Across jobs, each run's job is named first, as `runs get JOB RUN_ID` takes them.
    assert [(row["JOB ID"], row["RUN ID"], row["STATE"]) for row in table.table("JOB ID")] == [
        (second, recent, "QUEUED"),
        (first, dead, "DEAD_LETTERED"),
        (second, other_dead, "DEAD_LETTERED"),
        (first, old, "QUEUED"),
    ]
    assert ids(by_state, "runs", "runId") == [dead, other_dead]
    assert ids(since, "runs", "runId") == [recent, dead]
    assert ids(until, "runs", "runId") == [old]
    assert ids(between, "runs", "runId") == [other_dead]
    assert ids(typed, "runs", "runId") == [dead]
    assert ids(one_job, "runs", "runId") == [old]
    # One job's runs keep their table.
    assert "JOB ID" not in (await cli.ok("runs", "list", first)).stdout

    bad = await cli("runs", "list", "--since", "yesterday")
    assert bad.code == 2, bad
    assert "'yesterday' is neither an RFC 3339 instant like 2026-12-06T09:00:00Z nor a " in (
        " ".join(bad.stderr.split())
    )


def counted(result: Result) -> str:
    """The count a batch prints first, on stderr."""
    return result.stderr.splitlines()[0]


def outcomes(result: Result) -> dict[str, str]:
    return {row["JOB ID"]: row["RESULT"] for row in result.table("JOB ID")}


async def test_batch_pause_and_resume_count_first_and_show_each_outcome(team: Team) -> None:
    cli = team.cli
    dev = [await team.job(f"dev {n}", {"env": "dev"}) for n in range(2)]
    prod = await team.job("prod", {"env": "prod"})

    # A script must say yes: counted, then refused, nothing changed.
    unasked = await cli("jobs", "pause", "--label", "env=dev")
    assert unasked.code == 2, unasked
    assert counted(unasked) == '2 jobs to pause (ACTIVE, matching: labels.env = "dev")'
    assert unasked.stderr.splitlines()[1] == (
        "Error: INVALID_ARGUMENT: stdin is not a terminal to ask on: give --yes to pause them"
    )
    paused = await cli.ok("jobs", "list", "--state", "paused", "-o", "json")
    assert paused.json() == {}

    done = await cli.ok("jobs", "pause", "--label", "env=dev", "--yes")
    assert counted(done) == '2 jobs to pause (ACTIVE, matching: labels.env = "dev")'
    assert outcomes(done) == {dev[1]: "OK", dev[0]: "OK"}
    assert done.stdout.splitlines()[-1] == "Paused 2 of 2 jobs."
    again = await cli.ok("jobs", "pause", "--label", "env=dev", "--yes")
    assert (counted(again), again.stdout) == (
        '0 jobs to pause (ACTIVE, matching: labels.env = "dev")',
        "Nothing to pause.\n",
    )

    # By ids: each job's outcome as its single call would give it; the exit code is the
    # first failure's (FAILED_PRECONDITION: 6).
    mixed = await cli("jobs", "resume", dev[0], prod, "--yes")
    assert mixed.code == 6, mixed
    assert counted(mixed) == "2 jobs to resume (as named)"
    shown = outcomes(mixed)
    assert shown[dev[0]] == "OK"
    assert shown[prod].startswith("FAILED_PRECONDITION (JOB_NOT_PAUSED): "), shown
    assert mixed.stdout.splitlines()[-1] == "Resumed 1 of 2 jobs."

    # For scripts, the API's answer: each item's google.rpc.Status.
    scripted = await cli.ok("jobs", "resume", "--filter", "labels.env = dev", "-y", "-o", "json")
    assert scripted.json() == {
        "matched": 1,
        "results": [{"name": f"teams/{cli.team}/jobs/{dev[1]}", "status": {}}],
    }
    states = await cli.ok("jobs", "list", "--state", "active", "-o", "json")
    assert sorted(ids(states, "jobs", "jobId")) == sorted([*dev, prod])

    wrong = await asyncio.gather(
        cli("jobs", "pause"),
        cli("jobs", "pause", prod, "--label", "env=prod"),
        cli("jobs", "resume", *dev, "--etag", "x"),
    )
    assert [(r.code, r.stderr.split(": ", 2)[-1].strip()) for r in wrong] == [
        (2, "name a JOB, or give --filter or --label for many"),
        (2, "give JOBs or --filter and --label, not both"),
        (2, "--etag goes with one JOB"),
    ]


async def test_batch_redrive_by_job_or_filter_with_a_request_id(team: Team) -> None:
    cli = team.cli
    first, second = await team.job("first"), await team.job("second")
    mine, live, theirs = (
        await team.trigger(first),
        await team.trigger(first),
        await team.trigger(second),
    )
    for run_id in (mine, theirs):
        await team.dead_letter(run_id)

    one_job = await cli.ok("runs", "redrive", "--job", first, "--yes")
    assert counted(one_job) == f"1 run to redrive (DEAD_LETTERED, of {first})"
    generated = re.search(r"^Request id (\S+): a retry with --request-id \1 ", one_job.stderr, re.M)
    assert generated, one_job.stderr
    assert uuid.UUID(generated[1])
    rows = one_job.table("JOB ID")
    assert [(r["JOB ID"], r["RUN ID"], r["RESULT"]) for r in rows] == [(first, mine, "OK")]
    assert one_job.stdout.splitlines()[-1] == "Redrove 1 of 1 run."
    assert await team.states(mine, live, theirs) == ["QUEUED", "QUEUED", "DEAD_LETTERED"]

    chosen = ("--filter", "reason = ATTEMPTS_EXHAUSTED", "--request-id", "fix-1", "--yes")
    fixed = await cli.ok("runs", "redrive", *chosen, "-o", "json")
    assert counted(fixed) == (
        "1 run to redrive (DEAD_LETTERED, of every job, matching: reason = ATTEMPTS_EXHAUSTED)"
    )
    assert "Request id fix-1: a retry with --request-id fix-1 redrives no run twice." in (
        fixed.stderr
    )
    name = f"teams/{cli.team}/jobs/{second}/runs/{theirs}"
    assert fixed.json() == {"matched": 1, "results": [{"name": name, "status": {}}]}
    # Dead again: the same request id redrives no run twice; a new one does.
    await team.dead_letter(theirs)
    retried = await cli.ok("runs", "redrive", *chosen)
    assert retried.stdout.splitlines()[-1] == "Redrove 1 of 1 run."
    assert await team.states(theirs) == ["DEAD_LETTERED"]
    await cli.ok("runs", "redrive", "--since", "1h", "--yes")
    assert await team.states(theirs) == ["QUEUED"]
    nothing = await cli.ok("runs", "redrive", "--since", "1h")
    assert (nothing.stdout, nothing.code) == ("Nothing to redrive.\n", 0)

    wrong = await asyncio.gather(
        cli("runs", "redrive"),
        cli("runs", "redrive", first, mine, "--job", first),
    )
    assert [(r.code, r.stderr.split(": ", 2)[-1].strip()) for r in wrong] == [
        (2, "name a RUN, or give --job, --filter, --since or --until for many"),
        (2, "give a RUN or --job, --filter, --since and --until, not both"),
    ]


def section(screen: list[str], marker: str) -> list[str]:
    """The lines a script printed after ``echo marker``, up to the next marker."""
    start = screen.index(marker) + 1
    end = next((i for i in range(start, len(screen)) if screen[i].startswith("==")), len(screen))
    return screen[start:end]


# What the new columns leave at each width: labels once there is room after the schedule,
# a run's job beside its id, each batch item's result, ids and states whole.
COLUMNS: dict[int, dict[str, list[str]]] = {
    80: {
        "jobs": ["JOB ID", "NAME", "STATE", "NEXT RUN (UTC)"],
        "runs": ["RUN ID", "NOMINAL (UTC)", "STATE"],
        "resume": ["JOB ID", "RESULT"],
        "redrive": ["RUN ID", "RESULT"],
    },
    120: {
        "jobs": ["JOB ID", "NAME", "SCHEDULE", "LABELS", "STATE", "NEXT RUN (UTC)"],
        "runs": ["JOB ID", "RUN ID", "NOMINAL (UTC)", "STATE"],
        "resume": ["JOB ID", "RESULT"],
        "redrive": ["JOB ID", "RUN ID", "RESULT"],
    },
}


async def test_the_new_columns_fit_80_and_120_columns(team: Team) -> None:
    """`jobs list` with labels, `runs list` across jobs and the outcome of a batch, read off a
    real terminal 80 and 120 columns wide: ids and states whole, headings on their line, the
    columns dropped in their order, a long result wrapped between words."""
    cli = team.cli
    billing = await team.job("billing", {"env": "prod"})
    sync = await team.job("sync", {"env": "dev"})
    run_id = await team.trigger(billing)
    commands = {
        "jobs": "jobs list",
        "runs": "runs list",
        "resume": f"jobs resume {billing} {sync} --yes",  # both ACTIVE: refused, each
        "redrive": f"runs redrive --job {billing} --yes",
    }
    script = "; ".join(f"echo =={k}; {duetime_command()} {c}" for k, c in commands.items())
    for width, expected in COLUMNS.items():
        await team.dead_letter(run_id)
        async with terminal() as term:
            await term.start(script, cli_env(cli.api, cli.token), width, height=80)
            screen = await term.finished()
        sections = {k: section(screen, f"=={k}") for k in commands}
        tables = {k: screen_table(lines, expected[k][0]) for k, lines in sections.items()}
        for k, lines in sections.items():  # the tables; a count or a note is left to wrap
            start = lines.index(next(line for line in lines if line.startswith(expected[k][0])))
            table = lines[start : lines.index("", start) if "" in lines[start:] else None]
            assert max(len(line) for line in table) <= width, (k, width, screen)
        assert {k: heads for k, (heads, _) in tables.items()} == expected, (width, screen)

        _, jobs = tables["jobs"]
        assert [(j["JOB ID"], j["STATE"], j.get("LABELS")) for j in jobs] == [
            (sync, "ACTIVE", "env=dev" if width == 120 else None),
            (billing, "ACTIVE", "env=prod" if width == 120 else None),
        ]
        (run,) = tables["runs"][1]
        assert (run["RUN ID"], run["STATE"], run.get("JOB ID", billing)) == (
            run_id,
            "DEAD_LETTERED",
            billing,
        )
        results = {row["JOB ID"]: row["RESULT"] for row in tables["resume"][1]}
        why = "FAILED_PRECONDITION (JOB_NOT_PAUSED): "
        assert all(text.startswith(why) for text in results.values()), results
        assert set(results) == {billing, sync}
        (redriven,) = tables["redrive"][1]
        assert (redriven["RUN ID"], redriven["RESULT"]) == (run_id, "OK")
        assert "Redrove 1 of 1 run." in screen
        assert screen[-1] == "exit 0"


async def test_a_batch_asks_on_a_terminal(team: Team) -> None:
    """On a terminal the count comes with a question: no changes nothing, yes goes on."""
    cli = team.cli
    job_id = await team.job("nightly", {"env": "dev"})
    env = cli_env(cli.api, cli.token)
    for answer, state in (("n", "ACTIVE"), ("y", "PAUSED")):
        async with terminal() as term:
            await term.start(f"{duetime_command()} jobs pause --label env=dev", env, 100)

            async def asking() -> bool:
                return any(line.endswith("Pause them? [y/N]:") for line in await term.screen())

            await eventually(asking, 30, "the command asks")
            await term.keys(answer, "Enter")
            screen = await term.finished()
        assert screen[0] == '1 job to pause (ACTIVE, matching: labels.env = "dev")', screen
        assert screen[-1] == "exit 0", screen
        if answer == "n":
            assert "Nothing changed." in screen, screen
        else:
            _, rows = screen_table(screen, "JOB ID")
            assert rows == [{"JOB ID": job_id, "RESULT": "OK"}], screen
        shown = await cli.ok("jobs", "get", job_id, "-o", "json")
        assert shown.json()["job"]["state"] == f"JOB_STATE_{state}"


HOURLY_YAML = """\
displayName: hourly
schedule:
  cron:
    expression: "0 * * * *"
    timeZone: America/New_York
target:
  http:
    url: https://billing.internal/run
"""


async def test_backfill_counts_first_asks_then_makes_the_runs(team: Team) -> None:
    cli = team.cli
    path = team.tmp / "hourly.yaml"
    path.write_text(HOURLY_YAML)
    job_id = (await cli.ok("jobs", "create", "-f", str(path), "-o", "json")).json()["job"]["jobId"]
    # Across the fall-back night in New York: 01:00 happens twice, both run.
    window = ("--from", "2025-11-01T12:00:00Z", "--to", "2025-11-03T00:00:00Z")

    dry = await cli.ok("backfill", job_id, *window, "--dry-run")
    assert dry.stderr.startswith(
        "To backfill: 36 occurrences from 2025-11-01 12:00:00Z to 2025-11-02 23:00:00Z: 36 runs."
    ), dry.stderr
    assert "Nothing changed (--dry-run)." in dry.stdout
    unasked = await cli("backfill", job_id, *window)
    assert unasked.code == 2, unasked
    assert "give --yes to backfill them" in unasked.stderr

    made = await cli.ok("backfill", job_id, *window, "--yes", "--request-id", "cli-1", "-o", "json")
    assert made.json()["runCount"] == 36
    listed = await cli.ok(
        "runs", "list", job_id, "--filter", "origin = BACKFILL", "--limit", "0", "-o", "json"
    )
    assert len(listed.json()["runs"]) == 36
    again = await cli.ok(
        "backfill", job_id, *window, "--overlap", "skip_ran", "--dry-run", "-o", "json"
    )
    assert again.json()["skippedCount"] == 36
    assert "runCount" not in again.json()

    too_many = await cli(
        "backfill", job_id, "--from", "2020-01-01T00:00:00Z", "--to", "2022-01-01T00:00:00Z"
    )
    assert too_many.code == 3, too_many
    assert "end_time: the range holds 17544 occurrences; at most 10000" in too_many.stderr
