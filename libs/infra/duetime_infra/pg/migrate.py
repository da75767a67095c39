"""Numbered SQL migrations, applied by one command under an advisory lock.

Services never migrate at start-up; they only check (``check_schema``) that the database is at
a version they can run against, so old and new versions run side by side during a rolling
deploy. Migrations are expand-then-contract: an expand migration (a new column with a default,
a wider constraint) leaves every earlier build working, so a build accepts any newer schema
unless a contract migration says otherwise. A contract migration declares, in a line
``-- compatible-from: N``, the oldest build (by the schema version it was written for) that
still works against it; the database keeps the highest such declaration, so an old build that
has never seen the contract migration's file still learns that it must not start. Indexes a
migration names in ``-- build-concurrently:`` lines are built first, without blocking writes
(``index_build``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources

import asyncpg

from duetime_core.backoff import DoublingBackoff
from duetime_core.errors import FailedPrecondition
from duetime_infra.pg.index_build import IndexBuild, build_index, index_builds
from duetime_infra.pg.pool import Conn

log = logging.getLogger(__name__)

# An arbitrary constant shared by every migrating process: the advisory lock serialises them.
_MIGRATION_LOCK = 0x6475_6574_696D_65  # "duetime"
_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_COMPATIBLE_FROM = re.compile(r"^-- compatible-from: (\d+)$", re.MULTILINE)

# The schema version this build was written for (its newest migration), and the oldest schema
# its queries work against: they use the HANDED_BACK outcome (2), runs.budget_start_attempt
# (3), the team quotas, usage and held runs (4), attempts.call_progress (5),
# duetime_shown_state (10), the job history's columns (12), the workers' beat records (14),
# the runs a job's schedule made (15), the job's lock key (16), the teams' signing keys and
# default (17), the teams' calendars (18), the rate limit's charges made ahead of time (20,
# 22), the worker tokens' binding (23), the outbox's notifications (24), the pre-call window
# (25), the worker processes' records (26), each run's latest attempt in its row (27, a
# contract migration: no older build runs against it), its trace context as bytes with the
# open-attempt rule (28), the week's partitions made packed (29: the archive's adoption of a
# week calls it), the claim tokens' history a claim refers to (30) and a run's own trace id
# (31: the archive's export reads it), so the database must be migrated before this build is
# deployed. 6 (the reaper's indexes by time), 7 (no second index on run_id), 8 (retries by
# time), 9 (finished runs counted on eight rows a team) and 11 (a team's runs by time) only
# make them faster; 13 (the archive's tables) is needed only with an archive configured; 19 (a
# job's waiting runs by their own index) only makes them faster, and 21 (fewer, narrower
# indexes on runs) smaller.
BUILD_SCHEMA_VERSION = 31
MIN_SUPPORTED_VERSION = 31


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def label(self) -> str:
        """Its file's name without the suffix: 0004_team_quotas."""
        return f"{self.version:04d}_{self.name}"

    @property
    def compatible_from(self) -> int:
        """The oldest build this schema still serves: 1 unless a contract migration says."""
        declared = _COMPATIBLE_FROM.search(self.sql)
        return int(declared[1]) if declared else 1


def load_migrations() -> list[Migration]:
    found: list[Migration] = []
    for entry in resources.files("duetime_infra.pg.migrations").iterdir():
        match = _FILE.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migration numbers must run 1..n without gaps, found {versions}")
    return found


# A migration's lock request waits at most this long (then it is rolled back and tried again):
# an ALTER queued behind a long reader would otherwise hold up every claim, start and beat
# queued behind it on a live system.
LOCK_TIMEOUT_SECONDS = 2.0
# How long to keep trying a migration whose locks are not granted, backing off between tries.
LOCK_PATIENCE_SECONDS = 600.0


async def _patiently(migration: Migration, step: Callable[[], Awaitable[None]]) -> None:
    """``step``, tried again with backoff while its locks are not granted in time."""
    deadline = time.monotonic() + LOCK_PATIENCE_SECONDS
    pauses = DoublingBackoff(0.1, 5.0)
    while True:
        try:
            await step()
            return
        except asyncpg.LockNotAvailableError:
            pause = pauses.next()
            if time.monotonic() + pause > deadline:
                raise
            log.warning(
                "migration %s waits for its locks",
                migration.label,
                extra={"action": "migration_lock_busy", "version": migration.version},
            )
            await asyncio.sleep(pause)


async def _apply_one(conn: Conn, migration: Migration, lock_timeout: float) -> None:
    """The migration's concurrent index builds (``index_build``), each outside a transaction,
    then its SQL and its record in one transaction."""
    timeout = f"{int(lock_timeout * 1000)}ms"

    async def build(index: IndexBuild) -> None:
        await conn.execute(f"SET lock_timeout = '{timeout}'")
        try:
            await build_index(conn, index)
        finally:
            await conn.execute("RESET lock_timeout")

    async def apply() -> None:
        async with conn.transaction():
            await conn.execute(f"SET LOCAL lock_timeout = '{timeout}'")
            await conn.execute(migration.sql)
            await conn.execute(
                """INSERT INTO duetime_schema_migrations (version, name, compatible_from)
                   VALUES ($1, $2, $3)""",
                migration.version,
                migration.name,
                migration.compatible_from,
            )

    for index in index_builds(migration.sql):
        await _patiently(migration, functools.partial(build, index))
    await _patiently(migration, apply)


async def _lock(conn: Conn) -> None:
    """The migration lock, asked for again until granted: a statement waiting for it would
    hold a snapshot, for which the holder's concurrent index builds would wait in turn."""
    pauses = DoublingBackoff(0.05, 1.0)
    # Polled: the lock is another process's, with no event to wait on.
    while not await conn.fetchval("SELECT pg_try_advisory_lock($1)", _MIGRATION_LOCK):  # noqa: ASYNC110
        await asyncio.sleep(pauses.next())


async def apply_migrations(
    conn: Conn, *, up_to: int | None = None, lock_timeout: float = LOCK_TIMEOUT_SECONDS
) -> list[int]:
    """Applies every pending migration (through ``up_to``), each in its own transaction (its
    concurrent index builds before it) whose lock requests give way after ``lock_timeout`` and
    are tried again; returns those applied."""
    applied_now: list[int] = []
    await _lock(conn)
    try:
        await conn.execute(
            """CREATE TABLE IF NOT EXISTS duetime_schema_migrations (
                   version integer PRIMARY KEY,
                   name text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        await conn.execute(
            """ALTER TABLE duetime_schema_migrations
               ADD COLUMN IF NOT EXISTS compatible_from integer NOT NULL DEFAULT 1"""
        )
        done = {
            r["version"] for r in await conn.fetch("SELECT version FROM duetime_schema_migrations")
        }
        for migration in load_migrations():
            if migration.version in done or (up_to is not None and migration.version > up_to):
                continue
            started = time.monotonic()
            await _apply_one(conn, migration, lock_timeout)
            log.info(
                "migration %s applied (%.1f s)",
                migration.label,
                time.monotonic() - started,
                extra={"action": "migrated", "version": migration.version},
            )
            applied_now.append(migration.version)
        async with conn.transaction():
            await conn.execute("SELECT duetime_maintain_partitions()")
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _MIGRATION_LOCK)
    return applied_now


async def schema_version(conn: Conn) -> int:
    return (await schema_state(conn))[0]


async def schema_state(conn: Conn) -> tuple[int, int]:
    """(version, compatible_from) of the database; (0, 1) before any migration."""
    exists = await conn.fetchval("SELECT to_regclass('duetime_schema_migrations') IS NOT NULL")
    if not exists:
        return 0, 1
    has_column = await conn.fetchval(
        """SELECT EXISTS (SELECT 1 FROM information_schema.columns
                          WHERE table_name = 'duetime_schema_migrations'
                            AND column_name = 'compatible_from')"""
    )
    row = await conn.fetchrow(
        "SELECT max(version) AS version, "
        + ("max(compatible_from)" if has_column else "1")
        + " AS compatible_from FROM duetime_schema_migrations"
    )
    assert row is not None  # an aggregate always returns one row
    return int(row["version"] or 0), int(row["compatible_from"] or 1)


async def check_schema(conn: Conn) -> int:
    """Refuses to serve against a schema older than this build's queries need, or one a
    contract migration has made incompatible with it; a newer expand-only schema is fine."""
    version, compatible_from = await schema_state(conn)
    if version < MIN_SUPPORTED_VERSION:
        raise FailedPrecondition(
            f"database schema version {version} is older than this build needs "
            f"({MIN_SUPPORTED_VERSION}); run `duetime-ops migrate`",
            reason="SCHEMA_VERSION_UNSUPPORTED",
        )
    if compatible_from > BUILD_SCHEMA_VERSION:
        raise FailedPrecondition(
            f"database schema version {version} no longer serves builds written for version "
            f"{BUILD_SCHEMA_VERSION} (it needs {compatible_from} or later): deploy a newer build",
            reason="SCHEMA_VERSION_UNSUPPORTED",
        )
    return version
