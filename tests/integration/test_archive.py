"""Run history archived before it is dropped (duetime_infra.archive), against PostgreSQL and a
real S3 server (moto's server mode): a week past the hot retention is written, verified and
then dropped; an outage, a bad read-back or a write during the export keeps it; a pass that
crashed resumes without writing twice; runs written later to a week with no partition (a
backfill) are archived too; and the API reads archived weeks like live ones."""

from __future__ import annotations

import os
import sys
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import asyncpg
import grpc
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from duetime.jobs.v1 import job_service_pb2 as svc
from duetime.jobs.v1 import run_pb2
from duetime_infra.archive.archiver import Outcome, PassResult, archive_pass
from duetime_infra.archive.layout import SCHEMA_VERSION, Manifest, manifest_key, object_key
from duetime_infra.archive.settings import ArchiveSettings
from duetime_infra.pg.fencing import FencingToken
from duetime_infra.pg.pool import Conn, create_pool
from duetime_infra.tracecontext import read_trace, trace_id_of
from duetime_scheduler.maintenance import ArchivePasses, PartitionMaintenance, record_pass
from testkit.api import ApiClient, failure, running_api
from testkit.history import HOT_RUNS, RUNS_A_WEEK, seed_history, seed_runs
from testkit.jobs import cron_job
from testkit.metrics import recorded_metrics
from testkit.s3 import MotoServer, filesystem, private_s3


class Crash(BaseException):
    """A pass's process dying at a step (not an error the pass could handle)."""


@asynccontextmanager
async def connected(dsn: str) -> AsyncIterator[asyncpg.Connection[asyncpg.Record]]:
    """A session of its own, closed at the end (a pass's advisory lock ends with it)."""
    conn = await asyncpg.connect(dsn)
    try:
        yield conn
    finally:
        await conn.close()


def partition(week: datetime) -> str:
    return f"runs_{week.strftime('%Y%m%d')}"


async def exists(conn: Conn, table: str) -> bool:
    return bool(await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", table))


def week_of(result: PassResult, week: datetime) -> str:
    found = [w for w in result.weeks if w.week_start == week.isoformat()]
    assert len(found) == 1, result
    return found[0].outcome


def objects_of(server: MotoServer, settings: ArchiveSettings, week: datetime) -> dict[str, float]:
    """The week's objects in the bucket, with their modification times."""
    folder = settings.key(object_key(week)).rsplit("/", 1)[0]
    infos = filesystem(server).get_file_info(pafs.FileSelector(folder, allow_not_found=True))
    return {i.base_name: i.mtime.timestamp() for i in infos if i.type == pafs.FileType.File}


def archived_table(
    s3: MotoServer, settings: ArchiveSettings, key: str, runs: int, attempts: int
) -> pa.Table:
    """The archived object ``key``, checked to hold ``runs`` runs and ``attempts`` attempts,
    sorted by team, job and nominal time."""
    table = pq.read_table(settings.key(key), filesystem=filesystem(s3))
    assert table.num_rows == runs
    assert sum(len(a or ()) for a in table["attempts"].to_pylist()) == attempts
    keys = list(
        zip(*(table[c].to_pylist() for c in ("team_id", "job_id", "nominal_time")), strict=True)
    )
    assert keys == sorted(keys)
    return table


# The seeded jobs, and the week past the hot retention that holds RUNS_A_WEEK of their runs.
History = tuple[list[uuid.UUID], datetime]


@pytest.fixture
async def history(db_dsn: str) -> History:
    async with running_api(db_dsn):  # makes team-a
        pass
    return await seed_history(db_dsn)


@pytest.fixture
def settings(s3: MotoServer) -> ArchiveSettings:
    """The archive in a bucket of its own."""
    return s3.settings(s3.new_bucket())


async def seed_old_week(conn: Conn, jobs: list[uuid.UUID]) -> datetime:
    """20 runs, one an hour, in the week of 70 days ago: older than every partition, so they
    land in the default ones; the week's start."""
    old: datetime = await conn.fetchval(
        "SELECT date_trunc('week', duetime_now() - interval '70 days')"
    )
    await seed_runs(conn, jobs, old + timedelta(hours=3), 20, timedelta(hours=1))
    return old


async def archived_row(conn: Conn, week: datetime) -> asyncpg.Record:
    """The week's row in archive_weeks, checked to say it is archived."""
    row = await conn.fetchrow(
        "SELECT object_key, runs, attempts, archive_time FROM archive_weeks WHERE week_start = $1",
        week,
    )
    assert row is not None
    assert row["archive_time"] is not None
    return row


async def test_a_week_past_hot_retention_is_archived_verified_and_dropped(
    db_dsn: str, s3: MotoServer, settings: ArchiveSettings, history: History
) -> None:
    jobs, week = history
    async with connected(db_dsn) as conn:
        runs, attempts = await in_tables(
            conn, week, f'"{partition(week)}"', f'"attempts_{week:%Y%m%d}"'
        )
        claims = await week_claims(conn, week)
        traces = await week_traces(conn, week)
        result = await archive_pass(conn, settings)
        assert week_of(result, week) == Outcome.ARCHIVED
        assert not result.failures
        assert result.pending == 0
        assert not await exists(conn, partition(week))
        assert not await exists(conn, f"attempts_{week:%Y%m%d}")
        # The hot week stays, and so does every partition from now on.
        assert await conn.fetchval("SELECT count(*) FROM runs") == HOT_RUNS
        row = await archived_row(conn, week)
        assert (row["runs"], row["attempts"]) == (runs, attempts)
        # Maintenance now drops nothing itself and does not make the archived week again.
        await conn.execute("SELECT duetime_maintain_partitions(interval '1 day')")
        assert not await exists(conn, partition(week))
        assert await conn.fetchval("SELECT count(*) FROM runs") == HOT_RUNS

    with filesystem(s3).open_input_stream(settings.key(manifest_key(week))) as stream:
        manifest = Manifest.from_json(stream.read())
    assert (manifest.runs, manifest.attempts, manifest.schema_version) == (
        runs,
        attempts,
        SCHEMA_VERSION,
    )
    table = archived_table(s3, settings, object_key(week), runs, attempts)
    assert set(table["job_id"].to_pylist()) == {str(j) for j in jobs}
    # Each run's claim proof as its token holds it (schema 30) or as its row does (claimed
    # before it), or '' and 0 for a trigger.
    archived = Counter(
        zip(
            *(table[c].to_pylist() for c in ("claimed_by", "claim_epoch", "claim_revision")),
            strict=True,
        )
    )
    assert archived == claims
    assert set(archived) == {("scheduler-1", 1, 42), ("scheduler-0", 1, 41), ("", 0, 0)}
    # Each run's trace id as the api reads it, from the run's own ids (schema 31) or from the
    # 25 bytes a run made before keeps; '' for a missed run.
    assert dict(zip(table["run_id"].to_pylist(), table["trace_id"].to_pylist(), strict=True)) == (
        traces
    )
    assert {len(t) for t in traces.values()} == {0, 32}


async def week_traces(conn: Conn, week: datetime) -> dict[str, str]:
    rows = await conn.fetch(
        "SELECT run_id, trace_context, traceparent FROM runs "
        "WHERE nominal_time >= $1 AND nominal_time < $2",
        week,
        week + timedelta(days=7),
    )
    assert {len(r["trace_context"] or b"") for r in rows} == {0, 1, 25}
    return {
        str(r["run_id"]): trace_id_of(read_trace(r["trace_context"], r["traceparent"], r["run_id"]))
        for r in rows
    }


async def week_claims(conn: Conn, week: datetime) -> Counter[tuple[str, int, int]]:
    rows = await conn.fetch(
        "SELECT claimed_by, claim_epoch, claim_revision FROM run_claims "
        "WHERE nominal_time >= $1 AND nominal_time < $2",
        week,
        week + timedelta(days=7),
    )
    return Counter((r["claimed_by"], r["claim_epoch"], r["claim_revision"]) for r in rows)


async def in_tables(
    conn: Conn, week: datetime, runs_table: str, attempts_table: str
) -> tuple[int, int]:
    """The week's runs in ``runs_table`` and their attempts: each run's latest, in its row, and
    those before it in ``attempts_table``."""
    in_week = "nominal_time >= $1 AND nominal_time < $2"
    row = await conn.fetchrow(
        f"SELECT (SELECT count(*) FROM {runs_table} WHERE {in_week}) AS runs, "
        f"(SELECT count(*) FROM {runs_table} WHERE {in_week} AND attempt_start_time IS NOT NULL) "
        f"+ (SELECT count(*) FROM {attempts_table} WHERE {in_week}) AS attempts",
        week,
        week + timedelta(days=7),
    )
    assert row is not None
    return row["runs"], row["attempts"]


async def in_default(conn: Conn, week: datetime) -> tuple[int, int]:
    """The runs and attempts of the week in the default partitions."""
    return await in_tables(conn, week, "runs_default", "attempts_default")


async def test_runs_backfilled_into_an_archived_week_are_archived_with_it(
    db_dsn: str, s3: MotoServer, settings: ArchiveSettings, history: History
) -> None:
    jobs, week = history
    async with connected(db_dsn) as conn:
        assert week_of(await archive_pass(conn, settings), week) == Outcome.ARCHIVED
        first = await archived_row(conn, week)
        # Written after the week's partitions were dropped: they land in the default ones.
        await seed_runs(conn, jobs, week + timedelta(hours=2, minutes=7), 30, timedelta(minutes=15))
        added_runs, added_attempts = await in_default(conn, week)
        assert added_runs == 30

        result = await archive_pass(conn, settings)
        assert week_of(result, week) == Outcome.ARCHIVED
        assert not result.failures
        assert await in_default(conn, week) == (0, 0)
        assert not await exists(conn, partition(week))
        again = await archived_row(conn, week)
        assert (again["runs"], again["attempts"]) == (
            first["runs"] + added_runs,
            first["attempts"] + added_attempts,
        )
    # One object holds the week's runs, old and new, sorted; the one it replaced is gone.
    assert set(objects_of(s3, settings, week)) == {"manifest.json", "runs.1.parquet"}
    archived_table(s3, settings, again["object_key"], again["runs"], again["attempts"])


async def backfilled_runs(api: ApiClient, job: str) -> list[run_pb2.Run]:
    return [r for page, _ in await every_page(api, job, "origin = BACKFILL") for r in page]


async def test_a_backfill_into_an_archived_week_waits_in_flight_then_is_archived(
    db_dsn: str, settings: ArchiveSettings, history: History
) -> None:
    """The real BackfillJob: its runs are read while in flight and after their week's archive."""
    _, week = history
    async with running_api(db_dsn, archive=settings) as api:
        created = svc.CreateJobRequest(job=cron_job("* * * * *", "UTC"))
        job = (await api.stub.CreateJob(created, metadata=api.auth())).job.name
        async with connected(db_dsn) as conn:
            assert week_of(await archive_pass(conn, settings), week) == Outcome.ARCHIVED
            request = svc.BackfillJobRequest(name=job, request_id="late-fix")
            request.start_time.FromDatetime(week + timedelta(days=2))
            request.end_time.FromDatetime(week + timedelta(days=2, minutes=30))
            done = await api.stub.BackfillJob(request, metadata=api.auth())
            assert done.run_count == 30
            assert (await in_default(conn, week))[0] == 30

            # In flight: moved into the week's partitions again; the week waits for them.
            assert week_of(await archive_pass(conn, settings), week) == Outcome.IN_FLIGHT
            assert await in_default(conn, week) == (0, 0)
            in_flight = await backfilled_runs(api, job)
            assert len(in_flight) == 30

            # What the workers would do: the runs succeed.
            await conn.execute(
                "UPDATE runs SET state = 'SUCCEEDED', update_time = duetime_now() "
                "WHERE origin LIKE 'BACKFILL:%'"
            )
            assert week_of(await archive_pass(conn, settings), week) == Outcome.ARCHIVED
            assert not await exists(conn, partition(week))
            assert (await archived_row(conn, week))["runs"] == RUNS_A_WEEK + 30
        archived = await backfilled_runs(api, job)
    assert [r.run_id for r in archived] == [r.run_id for r in in_flight]
    assert {r.state for r in archived} == {run_pb2.RUN_STATE_SUCCEEDED}


async def test_runs_backfilled_into_a_week_older_than_every_partition_are_archived(
    db_dsn: str, s3: MotoServer, settings: ArchiveSettings, history: History
) -> None:
    jobs, _ = history
    async with connected(db_dsn) as conn:
        old = await seed_old_week(conn, jobs)
        assert not await exists(conn, partition(old))
        runs, attempts = await in_default(conn, old)
        assert runs == 20

        result = await archive_pass(conn, settings)
        assert week_of(result, old) == Outcome.ARCHIVED
        assert await in_default(conn, old) == (0, 0)
        assert not await exists(conn, partition(old))
        row = await archived_row(conn, old)
        assert (row["object_key"], row["runs"], row["attempts"]) == (
            object_key(old),
            runs,
            attempts,
        )
    table = pq.read_table(settings.key(object_key(old)), filesystem=filesystem(s3))
    assert table.num_rows == runs


async def test_runs_in_the_default_partition_stay_there_while_the_tables_are_busy(
    db_dsn: str, settings: ArchiveSettings, history: History
) -> None:
    jobs, _ = history
    async with connected(db_dsn) as conn, connected(db_dsn) as reader:
        old = await seed_old_week(conn, jobs)
        held = await in_default(conn, old)
        async with reader.transaction():
            await reader.execute("LOCK TABLE runs IN ACCESS SHARE MODE")  # a long read
            result = await archive_pass(conn, settings)
        assert week_of(result, old) == Outcome.FAILED
        assert {w.reason for w in result.failures} == {"lock"}
        assert await in_default(conn, old) == held
        assert not await exists(conn, partition(old))
        assert week_of(await archive_pass(conn, settings), old) == Outcome.ARCHIVED


async def test_a_store_outage_keeps_the_week_and_counts_the_alert(
    db_dsn: str, history: History
) -> None:
    """The scheduler's own pass (a child process) against a store that went away."""
    _, week = history
    async with private_s3() as server:
        bucket = server.new_bucket()
    environ = {"DUETIME_PG_DSN": db_dsn, **server.environ(bucket)}
    maintenance = PartitionMaintenance(
        archive=server.settings(bucket), passes=ArchivePasses(environ={**os.environ, **environ})
    )
    pool = await create_pool(db_dsn, max_size=2)
    try:
        with recorded_metrics() as metrics:
            assert await maintenance(pool, [FencingToken(0, 1, 1)]) == 1
            result = await maintenance.passes.wait()
            assert result is not None
            assert week_of(result, week) == Outcome.FAILED
            assert {w.reason for w in result.failures} == {"store"}
            assert metrics.value("duetime.archive.failures", reason="store") == len(result.weeks)
            assert metrics.value("duetime.archive.pending") == len(result.weeks)
        async with pool.acquire() as conn:
            assert await exists(conn, partition(week))
            assert await conn.fetchval(f'SELECT count(*) FROM "{partition(week)}"') == RUNS_A_WEEK
    finally:
        await maintenance.close()
        await pool.close()


async def test_an_object_read_back_wrong_keeps_the_week_and_counts_the_alert(
    db_dsn: str, s3: MotoServer, settings: ArchiveSettings, history: History
) -> None:
    """The object is replaced between upload and read-back by one with a run fewer."""
    _, week = history
    store = filesystem(s3)

    async def replaced(step: str, key: str) -> None:
        if step == "uploaded" and key == settings.key(object_key(week)):
            table = pq.read_table(key, filesystem=store)
            pq.write_table(table.slice(1), key, filesystem=store)

    async with connected(db_dsn) as conn:
        with recorded_metrics() as metrics:
            result = await archive_pass(conn, settings, checkpoint=replaced)
            record_pass(result)
            assert week_of(result, week) == Outcome.FAILED
            assert metrics.value("duetime.archive.failures", reason="unverified") == 1
        assert await exists(conn, partition(week))
        assert "manifest.json" not in objects_of(s3, settings, week)
        # The next pass writes it again, and it verifies.
        again = await archive_pass(conn, settings)
        assert week_of(again, week) == Outcome.ARCHIVED
        assert not await exists(conn, partition(week))


@pytest.mark.parametrize("step", ["uploaded", "manifest"])
async def test_a_pass_that_crashed_resumes_without_writing_twice(
    db_dsn: str, s3: MotoServer, settings: ArchiveSettings, history: History, step: str
) -> None:
    _, week = history

    async def crash(at: str, key: str) -> None:
        if at == step and key == settings.key(object_key(week)):
            raise Crash(at)

    async with connected(db_dsn) as conn:  # a crashed process's session ends, its lock with it
        with pytest.raises(Crash):
            await archive_pass(conn, settings, checkpoint=crash)
    left = objects_of(s3, settings, week)
    assert set(left) == (
        {"runs.parquet", "manifest.json"} if step == "manifest" else {"runs.parquet"}
    )

    async with connected(db_dsn) as conn:
        assert await exists(conn, partition(week))
        result = await archive_pass(conn, settings)
        assert week_of(result, week) == Outcome.ARCHIVED
        resumed = next(w for w in result.weeks if w.week_start == week.isoformat()).resumed
        assert resumed == (step == "manifest")
        assert not await exists(conn, partition(week))
        assert (
            await conn.fetchval("SELECT runs FROM archive_weeks WHERE week_start = $1", week)
            == RUNS_A_WEEK
        )
    after = objects_of(s3, settings, week)
    assert set(after) == {"runs.parquet", "manifest.json"}
    if step == "manifest":
        assert after == left, "a verified archive was written again"


async def test_a_write_to_the_week_during_its_export_keeps_it_until_the_next_pass(
    db_dsn: str, s3: MotoServer, settings: ArchiveSettings, history: History
) -> None:
    """A run of the week changes (as a redrive would) after its rows were exported: the drop
    sees the change and leaves the week; the next pass archives it with the change."""
    _, week = history
    async with connected(db_dsn) as writer, connected(db_dsn) as conn:
        changed = await writer.fetchval(
            f"SELECT run_id FROM \"{partition(week)}\" WHERE state = 'DEAD_LETTERED' LIMIT 1"
        )

        async def change(step: str, key: str) -> None:
            if step == "uploaded" and key == settings.key(object_key(week)):
                await writer.execute(
                    "UPDATE runs SET reason_detail = 'changed during the export' WHERE run_id = $1",
                    changed,
                )

        first = await archive_pass(conn, settings, checkpoint=change)
        assert week_of(first, week) == Outcome.CHANGED
        assert await exists(conn, partition(week))
        second = await archive_pass(conn, settings)
        assert week_of(second, week) == Outcome.ARCHIVED
        assert not await exists(conn, partition(week))
    table = pq.read_table(settings.key(object_key(week)), filesystem=filesystem(s3))
    details = dict(
        zip(table["run_id"].to_pylist(), table["reason_detail"].to_pylist(), strict=True)
    )
    assert details[str(changed)] == "changed during the export"


async def every_page(
    api: ApiClient,
    parent: str,
    where: str,
    state: run_pb2.RunState.ValueType = run_pb2.RUN_STATE_UNSPECIFIED,
    size: int = 37,
) -> list[tuple[list[run_pb2.Run], str]]:
    """Each page of ListRuns (its runs and next page token) to the end."""
    pages: list[tuple[list[run_pb2.Run], str]] = []
    token = ""
    while True:
        request = svc.ListRunsRequest(
            parent=parent, filter=where, state=state, page_size=size, page_token=token
        )
        response = await api.stub.ListRuns(request, metadata=api.auth())
        pages.append((list(response.runs), response.next_page_token))
        token = response.next_page_token
        if not token:
            return pages


def listings(
    jobs: list[uuid.UUID], week: datetime
) -> list[tuple[str, str, run_pb2.RunState.ValueType]]:
    """(parent, filter, state) of the listings compared: every filter field, NOT and OR,
    missing start times, a range across the archived week's end."""
    team = "teams/team-a/jobs/-"
    job = f"teams/team-a/jobs/{jobs[0]}"
    inside = (week + timedelta(days=2)).isoformat()
    every = run_pb2.RUN_STATE_UNSPECIFIED
    return [
        (team, "", every),
        (job, "", every),
        (team, "state = DEAD_LETTERED OR origin = TRIGGER", every),
        (team, f'nominal_time >= "{inside}" AND state != SUCCEEDED', every),
        (team, f'NOT start_time > "{inside}"', every),
        (team, f'start_time != "{inside}" AND reason = MISFIRE', every),
        (team, f"job_id = {jobs[1]}", every),
        (job, "", run_pb2.RUN_STATE_DEAD_LETTERED),
        (team, f'nominal_time < "{inside}" AND -(origin = SCHEDULE)', every),
    ]


async def test_archived_runs_list_and_read_as_they_did_from_postgresql(
    db_dsn: str, settings: ArchiveSettings, history: History
) -> None:
    """Every page (runs and tokens) of each listing, and each run, the same before and after
    the week moved to the archive."""
    jobs, week = history
    async with running_api(db_dsn, archive=settings) as api:
        before = [await every_page(api, *listing) for listing in listings(jobs, week)]
        sample = [p[0][0] for p in before[0][-3:] if p[0]] + [before[0][-1][0][-1]]
        runs_before = [
            (await api.stub.GetRun(svc.GetRunRequest(name=r.name), metadata=api.auth())).run
            for r in sample
        ]
        async with connected(db_dsn) as conn:
            result = await archive_pass(conn, settings)
            assert week_of(result, week) == Outcome.ARCHIVED
        after = [await every_page(api, *listing) for listing in listings(jobs, week)]
        runs_after = [
            (await api.stub.GetRun(svc.GetRunRequest(name=r.name), metadata=api.auth())).run
            for r in sample
        ]
        other_team = await failure(
            api.stub.GetRun(
                svc.GetRunRequest(name=sample[-1].name), metadata=api.auth(api.other_token)
            )
        )
    for listing, old, new in zip(listings(jobs, week), before, after, strict=True):
        assert new == old, listing
    archived = {
        r.run_id for r in sample if r.nominal_time.ToDatetime(UTC) < week + timedelta(days=7)
    }
    assert archived, "the sample reads archived runs"
    assert runs_after == runs_before
    assert sum(len(p[0]) for p in before[0]) == RUNS_A_WEEK + HOT_RUNS
    assert (
        other_team.code == grpc.StatusCode.NOT_FOUND
        or other_team.code == grpc.StatusCode.PERMISSION_DENIED
    )


async def test_an_archive_out_of_reach_answers_unavailable_and_live_pages_still_read(
    db_dsn: str, history: History
) -> None:
    _, week = history
    async with private_s3() as server:
        settings = server.settings(server.new_bucket())
        async with connected(db_dsn) as conn:
            assert week_of(await archive_pass(conn, settings), week) == Outcome.ARCHIVED
    async with running_api(db_dsn, archive=settings) as api:
        parent = "teams/team-a/jobs/-"
        # A page the live weeks fill needs no archived week.
        live = await api.stub.ListRuns(
            svc.ListRunsRequest(parent=parent, page_size=HOT_RUNS), metadata=api.auth()
        )
        assert len(live.runs) == HOT_RUNS
        gone = await failure(
            api.stub.ListRuns(
                svc.ListRunsRequest(parent=parent, page_size=HOT_RUNS + 1), metadata=api.auth()
            )
        )
    assert gone.code == grpc.StatusCode.UNAVAILABLE
    assert gone.reason == "ARCHIVE_UNAVAILABLE"


async def test_a_pass_ended_by_its_scheduler_stopping_raises_no_alert() -> None:
    """A scheduler that stops ends its pass (the next resumes it): not a crash to alert on;
    a pass that dies by itself is one."""
    # A pass that lasts until it is ended: a child that sleeps instead of archiving.
    passes = ArchivePasses((sys.executable, "-c", "import time; time.sleep(60)"))
    with recorded_metrics() as metrics:
        assert passes.start()
        assert not passes.start(), "one pass at a time"
        await passes.close()
        assert await passes.wait() is None
        assert metrics.value("duetime.archive.failures") == 0
    crashing = ArchivePasses((sys.executable, "-c", "raise SystemExit(3)"))
    with recorded_metrics() as metrics:
        crashing.start()
        assert await crashing.wait() is None
        assert metrics.value("duetime.archive.failures", reason="crashed") == 1
