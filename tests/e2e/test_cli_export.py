"""``duetime runs export`` against the API as a process reading an archive (a moto server):
a range that spans archived and live weeks is written whole, as CSV and as Parquet, the same
runs ListRuns lists, in the same order."""

from __future__ import annotations

import csv
import uuid
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path

import asyncpg
import pyarrow.parquet as pq
import pytest

from duetime_infra.archive.archiver import Outcome, archive_pass
from testkit.cli import Cli, team_cli
from testkit.databases import create_database, drop_database
from testkit.history import HOT_RUNS, RUNS_A_WEEK, seed_history, seed_runs
from testkit.processes import service
from testkit.s3 import MotoServer

pytestmark = pytest.mark.timeout(120)

MORE_RUNS = 500


@pytest.fixture
async def archived(
    template_db: str, s3: MotoServer
) -> AsyncIterator[tuple[Cli, list[uuid.UUID], datetime]]:
    """team-a's history with its old week archived, and the CLI against an API reading it."""
    name = f"duetime_t_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name, template=template_db)
    bucket = s3.new_bucket()
    env = {"DUETIME_PG_DSN": dsn, "DUETIME_API_ADDRESS": "127.0.0.1:0", **s3.environ(bucket)}
    try:
        async with service("duetime_api", env, "DUETIME_API_PORT") as api:
            cli = await team_cli(dsn, api.address, "team-a")
            jobs, week = await seed_history(dsn)
            conn = await asyncpg.connect(dsn)
            try:
                # More than a page of ListRuns (1,000) in all.
                since = await conn.fetchval("SELECT duetime_now() - interval '3 days'")
                await seed_runs(conn, jobs, since, MORE_RUNS, timedelta(minutes=5))
                result = await archive_pass(conn, s3.settings(bucket))
            finally:
                await conn.close()
            assert [w.outcome for w in result.weeks if w.runs] == [Outcome.ARCHIVED]
            yield cli, jobs, week
    finally:
        await drop_database(name)


async def test_runs_export_writes_archived_and_live_runs_as_listed(
    archived: tuple[Cli, list[uuid.UUID], datetime], tmp_path: Path
) -> None:
    cli, jobs, week = archived
    listed = (await cli.ok("runs", "list", "--limit", "0", "-o", "json")).json()["runs"]
    assert len(listed) == RUNS_A_WEEK + HOT_RUNS + MORE_RUNS
    order = [r["runId"] for r in listed]

    await cli.ok("runs", "export", str(tmp_path / "all.parquet"))
    table = pq.read_table(tmp_path / "all.parquet")
    assert table["run_id"].to_pylist() == order
    attempts = sum(len(r["attempts"]) for r in listed if "attempts" in r)
    assert sum(len(a or ()) for a in table["attempts"].to_pylist()) == attempts
    archived_runs = [t for t in table["nominal_time"].to_pylist() if t < week + timedelta(days=7)]
    assert len(archived_runs) == RUNS_A_WEEK

    day = week + timedelta(days=2)
    await cli.ok(
        "runs", "export", str(tmp_path / "day.csv"), "--job", str(jobs[0]),
        "--since", day.isoformat(), "--until", (day + timedelta(days=1)).isoformat(),
    )  # fmt: skip
    with (tmp_path / "day.csv").open(newline="") as file:
        rows = list(csv.DictReader(file))
    expected = [
        r["runId"]
        for r in listed
        if r["jobId"] == str(jobs[0])
        and day.isoformat()
        <= r["nominalTime"].replace("Z", "+00:00")
        < (day + timedelta(days=1)).isoformat()
    ]
    assert [r["run_id"] for r in rows] == expected
    assert expected, "the day holds runs of the job"
    dead = [r for r in rows if r["state"] == "DEAD_LETTERED"]
    assert all(r["attempts"] == "3" and r["last_outcome"] == "FAILED" for r in dead)


async def test_runs_export_refuses_a_file_of_no_known_format(
    archived: tuple[Cli, list[uuid.UUID], datetime], tmp_path: Path
) -> None:
    cli, _, _ = archived
    result = await cli("runs", "export", str(tmp_path / "runs.txt"))
    assert result.code == 2
    assert "--format csv or parquet" in result.stderr
