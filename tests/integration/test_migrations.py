"""The migrations build the schema the code expects, on an empty database and again."""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from duetime_core.errors import FailedPrecondition
from duetime_infra.pg.attempts.start_view import StartFacts
from duetime_infra.pg.dispatch.redispatch import traceparent_of_run
from duetime_infra.pg.migrate import (
    BUILD_SCHEMA_VERSION,
    MIN_SUPPORTED_VERSION,
    Migration,
    apply_migrations,
    check_schema,
    load_migrations,
)
from duetime_infra.pg.sql import q
from duetime_infra.pg.typed_row import typed_row
from duetime_infra.tracecontext import new_run_trace, read_trace, stored_trace, trace_id_of
from testkit.databases import create_database, drop_database
from testkit.polling import eventually


@pytest.fixture
async def empty_db() -> AsyncIterator[asyncpg.Connection]:
    name = f"duetime_e_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(await create_database(name))
    yield conn
    await conn.close()
    await drop_database(name)


async def test_apply_to_empty_database_then_again(empty_db: asyncpg.Connection) -> None:
    with pytest.raises(FailedPrecondition):
        await check_schema(empty_db)
    applied = await apply_migrations(empty_db)
    assert applied == [m.version for m in load_migrations()]
    assert await check_schema(empty_db) == BUILD_SCHEMA_VERSION
    assert await apply_migrations(empty_db) == []
    tables = {
        r["tablename"]
        for r in await empty_db.fetch("SELECT tablename FROM pg_tables WHERE schemaname='public'")
    }
    expected = {"teams", "api_tokens", "jobs", "runs", "attempts", "outbox", "partition_tokens"}
    assert expected <= tables
    assert await empty_db.fetchval("SELECT count(*) FROM partition_tokens") == 1024
    index = await empty_db.fetchval(
        "SELECT indexdef FROM pg_indexes WHERE indexname = 'jobs_due_idx'"
    )
    assert "(partition, next_effective_time)" in index
    # The reaper scans open attempts by time, whatever partitions it owns (an index led by the
    # partition is descended once per owned partition on every pass); they are in the rows of
    # running runs, and the attempts table keeps no index of open ones.
    reaper = await empty_db.fetch(
        "SELECT indexdef FROM pg_indexes WHERE tablename = 'runs' AND indexdef LIKE "
        "'%WHERE (state = ''RUNNING''::text)%' AND indexname LIKE 'runs_open_%'"
    )
    assert sorted(r["indexdef"].split(" USING btree ")[1] for r in reaper) == [
        "(attempt_deadline) WHERE (state = 'RUNNING'::text)",
        "(attempt_lease_expire_time) WHERE (state = 'RUNNING'::text)",
    ]
    attempts = await empty_db.fetch("SELECT indexname FROM pg_indexes WHERE tablename = 'attempts'")
    assert [r["indexname"] for r in attempts] == ["attempts_pkey"]
    # Runs are found by run id through the primary key: no second index repeats its lead.
    runs = await empty_db.fetch(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'runs'"
    )
    by_run_id = [r["indexname"] for r in runs if r["indexdef"].endswith("(run_id)")]
    assert by_run_id == []
    assert any(r["indexname"] == "runs_pkey" for r in runs)
    # Retries are found by time, through an index built partition by partition (index_build).
    retry = {
        r["indexname"]: r["indexdef"] for r in runs if "(state = 'RETRY_WAIT'" in r["indexdef"]
    }
    assert list(retry) == ["runs_retry_due_time_idx"]
    assert (
        "(next_attempt_time) WHERE (state = 'RETRY_WAIT'::text)" in retry["runs_retry_due_time_idx"]
    )
    assert await empty_db.fetchval(
        "SELECT indisvalid FROM pg_index WHERE indexrelid = 'runs_retry_due_time_idx'::regclass"
    )


def test_the_build_ships_the_migrations_it_was_written_for() -> None:
    migrations = load_migrations()
    assert migrations[-1].version == BUILD_SCHEMA_VERSION
    assert MIN_SUPPORTED_VERSION <= BUILD_SCHEMA_VERSION
    # Every migration but one only expands the schema; 27 (each run's latest attempt in its
    # row) keeps no older build working.
    assert {m.version for m in migrations if m.compatible_from != 1} == {27}
    assert migrations[26].compatible_from == 27
    contract = Migration(9, "drop_x", "-- why\n-- compatible-from: 7\nALTER TABLE x DROP y;")
    assert contract.compatible_from == 7


async def test_a_newer_expand_only_schema_is_served_and_a_contracted_one_refused(
    empty_db: asyncpg.Connection,
) -> None:
    await apply_migrations(empty_db)
    # A later build applied an expand migration this build has never seen: still served.
    await empty_db.execute(
        "INSERT INTO duetime_schema_migrations (version, name) VALUES ($1, 'later_expand')",
        BUILD_SCHEMA_VERSION + 1,
    )
    assert await check_schema(empty_db) == BUILD_SCHEMA_VERSION + 1
    # Then a contract migration that only builds of the next version survive: refused.
    await empty_db.execute(
        """INSERT INTO duetime_schema_migrations (version, name, compatible_from)
           VALUES ($1, 'later_contract', $2)""",
        BUILD_SCHEMA_VERSION + 2,
        BUILD_SCHEMA_VERSION + 1,
    )
    with pytest.raises(FailedPrecondition, match="deploy a newer build"):
        await check_schema(empty_db)


async def test_a_schema_older_than_the_build_needs_is_refused(
    empty_db: asyncpg.Connection,
) -> None:
    await apply_migrations(empty_db)
    # As a database migrated by an earlier build looks: its newest migrations not yet applied,
    # and no compatible_from column (added by this build's migrator).
    await empty_db.execute(
        "DELETE FROM duetime_schema_migrations WHERE version >= $1", MIN_SUPPORTED_VERSION
    )
    await empty_db.execute("ALTER TABLE duetime_schema_migrations DROP COLUMN compatible_from")
    with pytest.raises(FailedPrecondition, match="older than this build needs"):
        await check_schema(empty_db)


# quota_lock_teams's in-flight runs as every build reads them: team_runs_done joined by team.
IN_FLIGHT = """SELECT u.dispatched - f.finished AS in_flight FROM team_usage u
JOIN team_runs_done f ON f.team_id = u.team_id JOIN teams t ON t.team_id = u.team_id
WHERE u.team_id = ANY($1::text[]) ORDER BY u.team_id FOR UPDATE OF u"""


async def test_finished_runs_move_to_a_teams_parts_and_are_read_as_their_sum(
    empty_db: asyncpg.Connection,
) -> None:
    await apply_migrations(empty_db, up_to=8)
    await empty_db.execute("INSERT INTO teams (team_id) VALUES ('before')")
    await empty_db.execute("UPDATE team_usage SET dispatched = 9 WHERE team_id = 'before'")
    await empty_db.execute("UPDATE team_runs_done SET finished = 5 WHERE team_id = 'before'")
    await apply_migrations(empty_db)
    await empty_db.execute("INSERT INTO teams (team_id) VALUES ('after')")
    parts = await empty_db.fetch(
        "SELECT team_id, part, finished FROM team_runs_done_parts ORDER BY team_id, part"
    )
    assert [tuple(r) for r in parts] == [("after", p, 0) for p in range(8)] + [
        ("before", p, 5 if p == 0 else 0) for p in range(8)
    ]
    await empty_db.execute("UPDATE team_runs_done_parts SET finished = 1 WHERE part = 3")
    async with empty_db.transaction():
        read = await empty_db.fetch(IN_FLIGHT, ["after", "before"])
    assert [r["in_flight"] for r in read] == [-1, 3]
    # Typed as the column was: an older build's cached statements keep their result types.
    assert await empty_db.fetchval("SELECT pg_typeof(finished)::text FROM team_runs_done") == (
        "bigint"
    )


async def test_an_older_builds_count_queued_behind_migration_9_lands_on_a_part() -> None:
    # A report of an older build, inside the old duetime_add_usage when migration 9 takes
    # team_runs_done, runs once the migration commits: its UPDATE finds the view, whose
    # trigger adds the count to the session's part, instead of failing.
    name = f"duetime_e_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name)
    migrator, older = [await asyncpg.connect(dsn) for _ in range(2)]
    try:
        await apply_migrations(migrator, up_to=8)
        await migrator.execute("INSERT INTO teams (team_id) VALUES ('t1')")
        finish_one = """SELECT duetime_add_usage('{"t1": [0, -1, 0]}'::jsonb)"""
        await older.execute(finish_one)  # the old body, its UPDATE's plan cached
        ninth = next(m for m in load_migrations() if m.version == 9)

        async def older_waits() -> bool:
            waiting = await migrator.fetchval(
                "SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1",
                older.get_server_pid(),
            )
            return bool(waiting == "Lock")

        async with migrator.transaction():
            await migrator.execute(ninth.sql)
            queued = asyncio.create_task(older.execute(finish_one))
            await eventually(older_waits, 10, "the older build's report queued", interval=0.01)
        await asyncio.wait_for(queued, 10)
        finished = await migrator.fetchval(
            "SELECT finished FROM team_runs_done WHERE team_id = 't1'"
        )
        assert finished == 2
    finally:
        for conn in (migrator, older):
            await conn.close()
        await drop_database(name)


@contextlib.asynccontextmanager
async def _with_a_job(up_to: int) -> AsyncIterator[asyncpg.Connection]:
    """A new database migrated up to version ``up_to``, with the team t1 and its job
    00000000-0000-0000-0000-00000000000a (partition 7); dropped afterwards."""
    name = f"duetime_e_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(await create_database(name))
    try:
        await apply_migrations(conn, up_to=up_to)
        await conn.execute(
            "INSERT INTO teams (team_id) VALUES ('t1');"
            "INSERT INTO jobs (job_id, team_id, partition, state, spec) "
            "VALUES ('00000000-0000-0000-0000-00000000000a', 't1', 7, 'ACTIVE', '{}');"
        )
        yield conn
    finally:
        await conn.close()
        await drop_database(name)


async def test_migration_27_moves_each_runs_latest_attempt_into_its_row() -> None:
    # Before 27 every attempt had its row: a run that ran twice (the second still open), one
    # that ran once and one never started. After it the latest of each is in its run's row,
    # the earlier one alone in the attempts table, and run_attempts shows all three as before.
    async with _with_a_job(up_to=26) as conn:
        at = datetime(2026, 12, 7, 12, tzinfo=UTC)
        runs = {state: uuid.uuid4() for state in ("RUNNING", "SUCCEEDED", "QUEUED")}
        for i, (state, run_id) in enumerate(runs.items()):
            await conn.execute(
                "INSERT INTO runs (run_id, job_id, team_id, partition, nominal_time, "
                "effective_time, origin, state, attempt, attempt_limit, job_version, "
                "start_delivery_id) VALUES ($1, '00000000-0000-0000-0000-00000000000a', 't1', "
                "7, $2, $2, 'SCHEDULE', $3, $4, 3, 1, $5)",
                run_id,
                at + timedelta(minutes=i),
                state,
                {"RUNNING": 2, "SUCCEEDED": 1, "QUEUED": 0}[state],
                "d-2@p1" if state == "RUNNING" else None,
            )
        attempts = [
            (runs["RUNNING"], at, 1, "w1", "", at, "FAILED", "HTTP 500"),
            (runs["RUNNING"], at, 2, "w2", "d-2@p1", at + timedelta(seconds=5), None, ""),
            (runs["SUCCEEDED"], at + timedelta(minutes=1), 1, "w1", "", at, "SUCCEEDED", ""),
        ]
        for run_id, nominal, number, worker, delivery, start, outcome, error in attempts:
            await conn.execute(
                "INSERT INTO attempts (run_id, nominal_time, number, partition, worker_id, "
                "delivery_id, start_time, lease_expire_time, deadline, end_time, outcome, "
                "error) VALUES ($1, $2, $3, 7, $4, $5, $6::timestamptz, $6 + interval '30 s', "
                "$6 + interval '5 min', CASE WHEN $7::text IS NOT NULL THEN $6 + interval '1 s' "
                "END, $7, $8)",
                run_id, nominal, number, worker, delivery, start, outcome, error,
            )  # fmt: skip
        seen = "SELECT run_id, number, worker_id, outcome, error FROM {} ORDER BY run_id, number"
        before = await conn.fetch(seen.format("attempts"))

        await apply_migrations(conn)

        assert await conn.fetch(seen.format("run_attempts")) == before
        assert [(r["run_id"], r["number"]) for r in await conn.fetch(seen.format("attempts"))] == [
            (runs["RUNNING"], 1)
        ]
        rows = {
            r["run_id"]: r
            for r in await conn.fetch(
                "SELECT run_id, attempt_worker_id, attempt_end_time, attempt_lease_expire_time, "
                "start_delivery_id FROM runs"
            )
        }
        running = rows[runs["RUNNING"]]
        assert (running["attempt_worker_id"], running["attempt_end_time"]) == ("w2", None)
        assert running["attempt_lease_expire_time"] == at + timedelta(seconds=35)
        assert running["start_delivery_id"] == "d-2@p1"
        assert rows[runs["SUCCEEDED"]]["attempt_worker_id"] == "w1"
        assert rows[runs["QUEUED"]]["attempt_worker_id"] is None
        # Only a running run may hold an open attempt.
        with pytest.raises(asyncpg.CheckViolationError):
            await conn.execute(
                "UPDATE runs SET state = 'QUEUED' WHERE run_id = $1", running["run_id"]
            )


async def test_a_run_an_older_build_made_keeps_its_traceparent_after_migration_28() -> None:
    # 28 keeps a new run's trace context as 25 bytes; a run a version-27 build made has only
    # its text, which the start's lock query still hands the worker.
    async with _with_a_job(up_to=27) as conn:
        run_id = uuid.uuid4()
        traceparent = new_run_trace(run_id).traceparent
        await conn.execute(
            "INSERT INTO job_versions (job_id, version, spec) "
            "VALUES ('00000000-0000-0000-0000-00000000000a', 1, '{}')"
        )
        await conn.execute(
            "INSERT INTO runs (run_id, job_id, team_id, partition, nominal_time, effective_time, "
            "origin, state, attempt_limit, job_version, traceparent) VALUES ($1, "
            "'00000000-0000-0000-0000-00000000000a', 't1', 7, $2, $2, 'SCHEDULE', 'QUEUED', 3, "
            "1, $3)",
            run_id, datetime(2026, 12, 7, 12, tzinfo=UTC), traceparent,
        )  # fmt: skip

        await apply_migrations(conn)

        (row,) = await conn.fetch(q("attempt_batch_runs_lock"), [run_id])
        facts = typed_row(StartFacts, row)
        assert (facts.trace_context, facts.traceparent) == (None, traceparent)
        assert traceparent_of_run(facts) == traceparent


# A QUEUED run of _with_a_job's job: $1 its id, $2 its time, $3 its origin, then the columns
# and values formatted in.
_QUEUED_RUN = (
    "INSERT INTO runs (run_id, job_id, team_id, partition, nominal_time, effective_time, "
    "origin, state, attempt_limit, job_version{}) VALUES ($1, "
    "'00000000-0000-0000-0000-00000000000a', 't1', 7, $2, $2, $3, 'QUEUED', 3, 1{})"
)


async def test_runs_claimed_before_migration_30_keep_their_proof_and_new_ones_refer_to_it() -> None:
    # A version-29 build claimed a run (its proof in its row) and the api made one (none);
    # after 30 both read as before, and an older build's claim still stores its proof itself.
    async with _with_a_job(up_to=29) as conn:
        at = datetime(2026, 12, 7, 12, tzinfo=UTC)
        insert = _QUEUED_RUN
        claimed = ", claimed_by, claim_epoch, claim_revision", ", 's-29', 2, 41"
        await conn.execute(insert.format(*claimed), uuid.uuid4(), at, "SCHEDULE")
        await conn.execute(insert.format("", ""), uuid.uuid4(), at, "TRIGGER:r1")

        await apply_migrations(conn)

        later = at + timedelta(minutes=1)
        await conn.execute(insert.format(*claimed), uuid.uuid4(), later, "SCHEDULE")
        proofs = await conn.fetch(
            "SELECT r.nominal_time, r.origin, c.claimed_by, c.claim_epoch, c.claim_revision "
            "FROM runs r JOIN run_claims c USING (run_id, nominal_time) ORDER BY 1, 2"
        )
        assert [tuple(p) for p in proofs] == [
            (at, "SCHEDULE", "s-29", 2, 41),
            (at, "TRIGGER:r1", "", 0, 0),
            (later, "SCHEDULE", "s-29", 2, 41),
        ]


async def test_every_form_of_a_runs_trace_reads_the_same_trace_id_in_sql_after_31() -> None:
    # Runs older builds made (the traceparent's text before 28, its 25 bytes from 28), one
    # with none, and one this build makes (the flags alone): duetime_run_trace_id (the
    # archive's export) reads each trace id as read_trace does.
    async with _with_a_job(up_to=30) as conn:
        at = datetime(2026, 12, 7, 12, tzinfo=UTC)
        insert = _QUEUED_RUN.format(", trace_context, traceparent", ", $4, $5")
        other = new_run_trace(uuid.uuid4()).traceparent  # ids not the run's own
        forms = [(None, other), stored_trace(other, uuid.uuid4()), (None, "")]
        for i, (stored, text) in enumerate(forms):
            minute = at + timedelta(minutes=i)
            await conn.execute(insert, uuid.uuid4(), minute, "SCHEDULE", stored, text)

        await apply_migrations(conn)

        own = uuid.uuid4()
        made = stored_trace(new_run_trace(own).traceparent, own)
        await conn.execute(insert, own, at + timedelta(minutes=3), "SCHEDULE", *made)
        rows = await conn.fetch(
            "SELECT run_id, trace_context, traceparent, "
            "duetime_run_trace_id(run_id, trace_context, traceparent) AS in_sql "
            "FROM runs ORDER BY nominal_time"
        )
        assert [len(r["trace_context"] or r["traceparent"]) for r in rows] == [55, 25, 0, 1]
        in_python = [
            trace_id_of(read_trace(r["trace_context"], r["traceparent"], r["run_id"])) for r in rows
        ]
        assert [r["in_sql"] for r in rows] == in_python
        assert in_python == [trace_id_of(other)] * 2 + ["", new_run_trace(own).trace_id]


async def test_a_migration_waiting_for_a_lock_does_not_hold_up_the_live_system() -> None:
    # Migration 3 alters runs. A long reader holds runs; the migration's queued lock request
    # must not hold every other query on runs behind it: it gives way after its lock timeout,
    # and is tried again until it gets in.
    name = f"duetime_e_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name)
    migrator, holder, reader = [await asyncpg.connect(dsn) for _ in range(3)]
    try:
        await apply_migrations(migrator, up_to=2)
        holding = holder.transaction()
        await holding.start()
        await holder.fetch("SELECT 1 FROM runs LIMIT 1")
        migrating = asyncio.create_task(apply_migrations(migrator, lock_timeout=0.3, up_to=3))

        async def alter_queued() -> bool:
            return bool(
                await reader.fetchval(
                    "SELECT EXISTS (SELECT 1 FROM pg_locks "
                    "WHERE NOT granted AND relation = 'runs'::regclass)"
                )
            )

        await eventually(alter_queued, 10, "the migration queued for runs", interval=0.01)
        async with asyncio.timeout(2):  # without the lock timeout: until the holder ends
            await reader.fetchval("SELECT count(*) FROM runs")
        assert not migrating.done()
        await holding.rollback()
        assert await asyncio.wait_for(migrating, 30) == [3]
    finally:
        for conn in (migrator, holder, reader):
            await conn.close()
        await drop_database(name)


async def test_concurrent_migrators_serialise(template_db: str) -> None:
    name = f"duetime_e_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name)
    try:
        a, b = await asyncpg.connect(dsn), await asyncpg.connect(dsn)
        results = await asyncio.gather(apply_migrations(a), apply_migrations(b))
        assert sorted(len(r) for r in results) == [0, len(load_migrations())]
        await a.close()
        await b.close()
    finally:
        await drop_database(name)


async def test_clock_can_be_shifted(db_dsn: str) -> None:
    conn = await asyncpg.connect(db_dsn)
    try:
        real = await conn.fetchval("SELECT duetime_now()")
        await conn.execute("""UPDATE duetime_clock SET "offset" = interval '100 days'""")
        shifted = await conn.fetchval("SELECT duetime_now()")
        delta = (shifted - real).total_seconds()
        assert 100 * 86400 <= delta < 100 * 86400 + 60
    finally:
        await conn.close()


async def insert_run(
    conn: asyncpg.Connection[asyncpg.Record], nominal: datetime, state: str, updated: datetime
) -> uuid.UUID:
    run_id = uuid.uuid4()
    await conn.execute(
        """INSERT INTO runs (run_id, job_id, team_id, partition, nominal_time, effective_time,
           origin, state, attempt_limit, job_version, update_time)
           VALUES ($1, $2, 't1', 0, $3, $3, 'SCHEDULE', $4, 3, 1, $5)""",
        run_id,
        uuid.uuid4(),
        nominal,
        state,
        updated,
    )
    return run_id


async def holder(conn: asyncpg.Connection[asyncpg.Record], run_id: uuid.UUID) -> str | None:
    name: str | None = await conn.fetchval(
        "SELECT tableoid::regclass::text FROM runs WHERE run_id = $1", run_id
    )
    return name


async def test_runs_partitions_created_moved_and_retired_by_finality(db_dsn: str) -> None:
    conn = await asyncpg.connect(db_dsn)
    try:
        now: datetime = await conn.fetchval("SELECT duetime_now()")
        parts = await conn.fetch(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = 'runs'::regclass"
        )
        assert len(parts) >= 6  # the default plus weekly ranges around now
        await conn.execute("INSERT INTO teams (team_id) VALUES ('t1');")
        # A run far ahead lands in the default partition, and moves to its own when the clock
        # reaches it and maintenance creates the range.
        ahead = await insert_run(conn, now + timedelta(days=200), "QUEUED", now)
        # Runs of this week: one still running, one long finished.
        running = await insert_run(conn, now, "RUNNING", now)
        done = await insert_run(conn, now, "SUCCEEDED", now)
        this_week = await holder(conn, running)
        assert this_week is not None
        assert this_week.startswith("runs_2")
        assert await holder(conn, ahead) == "runs_default"

        await conn.execute("""UPDATE duetime_clock SET "offset" = interval '199 days'""")
        later: datetime = await conn.fetchval("SELECT duetime_now()")
        # A past-dated one-off queued now, and a final record of the same age, both in default.
        one_off = await insert_run(conn, later - timedelta(days=60), "QUEUED", later)
        old_record = await insert_run(
            conn, later - timedelta(days=61), "MISSED", later - timedelta(days=40)
        )
        await conn.execute("SELECT duetime_maintain_partitions()")

        moved = await holder(conn, ahead)
        assert moved is not None
        assert moved.startswith("runs_2")
        # History is retired by finality, never a run in flight.
        assert await holder(conn, running) == this_week
        assert await holder(conn, done) == this_week
        assert await holder(conn, one_off) == "runs_default"
        assert await holder(conn, old_record) is None
        weeks = await conn.fetch(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = 'runs'::regclass AND c.relname NOT IN ('runs_default', $1)",
            this_week,
        )
        cutoff = (later - timedelta(days=37)).strftime("%Y%m%d")
        assert all(w["relname"][len("runs_") :] >= cutoff for w in weeks)

        # Once the last run of that old week is final, the week goes, attempts and all.
        await conn.execute("UPDATE runs SET state = 'SUCCEEDED' WHERE run_id = $1", running)
        await conn.execute("SELECT duetime_maintain_partitions()")
        assert await holder(conn, running) is None
        attempts_week = "attempts_" + this_week[len("runs_") :]
        assert await conn.fetchval("SELECT to_regclass($1)", attempts_week) is None
    finally:
        await conn.close()


async def _layout(conn: asyncpg.Connection[asyncpg.Record], table: str) -> list[asyncpg.Record]:
    """Each column of ``table`` in its physical order: its type's alignment and length."""
    return await conn.fetch(
        "SELECT a.attname, t.typalign::text AS typalign, t.typlen FROM pg_attribute a "
        "JOIN pg_type t ON t.oid = a.atttypid "
        "WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped "
        "ORDER BY a.attnum",
        table,
    )


async def _checks(conn: asyncpg.Connection[asyncpg.Record], table: str) -> set[str]:
    rows = await conn.fetch(
        "SELECT pg_get_constraintdef(oid) AS c FROM pg_constraint "
        "WHERE conrelid = $1::regclass AND contype = 'c'",
        table,
    )
    return {r["c"] for r in rows}


async def test_a_weeks_partition_is_packed_and_holds_its_runs_as_they_were(db_dsn: str) -> None:
    # Schema 29 makes a week's partitions with their columns by alignment, no padding between
    # them. A run moved into one from the default partition reads back the same, in fewer
    # bytes, and the partition keeps its table's CHECK constraints.
    conn = await asyncpg.connect(db_dsn)
    try:
        now: datetime = await conn.fetchval("SELECT duetime_now()")
        await conn.execute("INSERT INTO teams (team_id) VALUES ('t1');")
        run_id = await insert_run(conn, now + timedelta(days=200), "QUEUED", now)
        await conn.execute(
            "UPDATE runs SET trace_context = '\\x0102'::bytea, reason_detail = 'held', "
            "first_start_time = nominal_time, attempt_early = true WHERE run_id = $1",
            run_id,
        )
        before = await conn.fetchrow("SELECT * FROM runs WHERE run_id = $1", run_id)
        await conn.execute("""UPDATE duetime_clock SET "offset" = interval '199 days'""")
        await conn.execute("SELECT duetime_maintain_partitions()")

        part = await holder(conn, run_id)
        assert part is not None
        assert part.startswith("runs_2")
        assert await conn.fetchrow("SELECT * FROM runs WHERE run_id = $1", run_id) == before
        for table, week in (("runs", part), ("attempts", "attempts" + part[len("runs") :])):
            layout = await _layout(conn, week)
            assert {c["attname"] for c in layout} == {
                c["attname"] for c in await _layout(conn, table)
            }
            fixed = [c["typalign"] for c in layout if c["typlen"] > 0]
            assert fixed == sorted(fixed, key="disc".index)  # 8-byte first, then 4, 2, 1
            lengths = [c["typlen"] for c in layout]
            assert lengths[lengths.index(-1) :] == [-1] * lengths.count(-1)  # texts last
            assert await _checks(conn, week) == await _checks(conn, table)
        packed = await conn.fetchval(f'SELECT pg_column_size(p.*) FROM "{part}" p')
        as_table = await conn.fetchval("SELECT pg_column_size(r.*) FROM runs r")
        assert packed < as_table
        with pytest.raises(asyncpg.CheckViolationError):
            await conn.execute("UPDATE runs SET state = 'LOST' WHERE run_id = $1", run_id)
    finally:
        await conn.close()


async def migrate_command(dsn: str) -> tuple[list[str], list[str]]:
    """Runs ``duetime-ops migrate``: the lines of its stdout and its stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "duetime_ops",
        "migrate",
        "--dsn",
        dsn,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode().splitlines(), err.decode().splitlines()


async def test_the_command_names_each_migration_it_applies_and_sums_up() -> None:
    name = f"duetime_e_{uuid.uuid4().hex[:12]}"
    dsn = await create_database(name)
    try:
        summary, progress = await migrate_command(dsn)
        assert [re.sub(r" \(\d+\.\d s\)$", "", line) for line in progress] == [
            f"migration {m.label} applied" for m in load_migrations()
        ]
        assert progress[0].startswith("migration 0001_initial applied (")
        version = BUILD_SCHEMA_VERSION
        assert summary == [f"schema at version {version}; applied 0001..{version:04d}"]
        assert await migrate_command(dsn) == (
            [f"schema at version {version}; nothing to apply"],
            [],
        )
    finally:
        await drop_database(name)
