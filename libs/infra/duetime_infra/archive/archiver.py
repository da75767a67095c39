"""One archiving pass: every week of runs past the hot retention is written to the archive,
verified and then dropped from PostgreSQL.

Each step can be repeated, so a pass that crashed anywhere is resumed by the next one:

1. watch: the week gets its archive_weeks row and a trigger on its two partitions that counts
   every later write to them (``changes``);
2. export, in one snapshot: the change count, whether any run is still in flight (then the week
   waits), the row counts, and the rows;
3. write the Parquet object (always to the same key), upload it, read it back whole and check
   its hash and counts against the partitions';
4. write the manifest, last: a manifest exists only for an object that verified;
5. drop, in one transaction holding the partitions' locks: only if no write reached the week
   since the export (the change count is unchanged), the week is recorded archived and its
   partitions dropped.

A pass that finds a manifest matching the partitions (same change count and counts) and an
object that still verifies against it skips to the drop. Any failure leaves the partitions as
they are and is reported (``WeekOutcome``): nothing is dropped that was not verified.

Runs written to a week with no partition land in the default partition: a backfill of a week
archived already, or older than every partition. A pass first gives each such week past the
hot retention its partitions again, moving those runs in (``_adopt``); the week is then
archived as any other, an archived one merged with its object into a new object (the next key)
that replaces it in the same transaction as the drop.
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from duetime_infra.archive import objects
from duetime_infra.archive.export import (
    attempts_count_query,
    attempts_query,
    copy_out,
    read_week,
    runs_query,
)
from duetime_infra.archive.layout import (
    SCHEMA,
    SCHEMA_VERSION,
    SORT_KEYS,
    Manifest,
    manifest_key,
    object_key,
)
from duetime_infra.archive.objects import ArchiveUnverified, Written
from duetime_infra.archive.settings import ArchiveSettings
from duetime_infra.pg.sql import q

log = logging.getLogger(__name__)

# One pass at a time, whichever process runs it (a session advisory lock).
_ARCHIVE_LOCK = 0x6475_6574_6172_6368  # "duetarch"
# The drop waits this long for the partitions' locks, then gives up until the next pass: a
# waiting ACCESS EXCLUSIVE request holds up every statement on runs queued behind it.
DROP_LOCK_TIMEOUT = "2s"

# Steps a test may interrupt (a crash) or act between: after the object is uploaded, after
# its manifest is written; called with the step and the object's key.
Checkpoint = Callable[[str, str], Awaitable[None]]


async def _no_checkpoint(step: str, key: str) -> None:
    return None


class Outcome:
    ARCHIVED = "archived"
    # Not failures: a run still in flight, or writes since the export; the next pass retries.
    IN_FLIGHT = "in_flight"
    CHANGED = "changed"
    FAILED = "failed"


@dataclass(frozen=True)
class WeekOutcome:
    week_start: str
    outcome: str
    # For a failure: store (the object store failed), unverified (what was read back is not
    # what the partitions hold), lock (the drop's locks were not granted in time) or error.
    reason: str = ""
    detail: str = ""
    runs: int = 0
    attempts: int = 0
    resumed: bool = False
    seconds: float = 0.0
    # Seconds each step took (export, parquet, upload, verify, drop), for logs and the bench.
    steps: dict[str, float] = field(default_factory=dict)


@dataclass
class PassResult:
    weeks: list[WeekOutcome] = field(default_factory=list)
    # Weeks past the hot retention still in PostgreSQL after the pass.
    pending: int = 0
    # Another pass held the archive's lock: this one did nothing.
    busy: bool = False

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> PassResult:
        document = json.loads(text)
        weeks = [WeekOutcome(**w) for w in document["weeks"]]
        return cls(weeks, document["pending"], document["busy"])

    @property
    def failures(self) -> list[WeekOutcome]:
        return [w for w in self.weeks if w.outcome == Outcome.FAILED]


class Laps:
    """Seconds between successive steps."""

    def __init__(self) -> None:
        self.steps: dict[str, float] = {}
        self._last = time.monotonic()

    def lap(self, step: str) -> None:
        now = time.monotonic()
        self.steps[step] = round(self.steps.get(step, 0.0) + now - self._last, 3)
        self._last = now


@dataclass(frozen=True)
class Week:
    runs_table: str
    attempts_table: str
    start: datetime
    end: datetime
    # A week archived before: its object (relative key) and what that holds.
    archived_key: str | None = None
    archived_runs: int = 0
    archived_attempts: int = 0

    @property
    def object_key(self) -> str:
        return object_key(self.start, self.archived_key)


@dataclass(frozen=True)
class Snapshot:
    changes: int
    in_flight: bool
    runs: int
    attempts: int


async def archive_pass(
    conn: asyncpg.Connection[asyncpg.Record],
    settings: ArchiveSettings,
    s3: pafs.FileSystem | None = None,
    checkpoint: Checkpoint = _no_checkpoint,
) -> PassResult:
    """Archives every week due, oldest first, on ``conn`` (a connection of its own: it holds
    the archive's lock and long transactions)."""
    if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", _ARCHIVE_LOCK):
        return PassResult(busy=True)
    try:
        store = s3 if s3 is not None else objects.filesystem(settings)
        await conn.execute(q("archive_policy_set"), settings.hot_retention)
        result = PassResult()
        for start in await conn.fetch(q("archive_default_weeks"), settings.hot_retention):
            adopted = await _adopt(conn, start["week_start"])
            if adopted is not None:
                result.weeks.append(adopted)
        for row in await conn.fetch(q("archive_due_weeks"), settings.hot_retention):
            week = Week(
                row["runs_table"],
                row["attempts_table"],
                row["week_start"],
                row["week_end"],
                row["archived_key"],
                row["archived_runs"] or 0,
                row["archived_attempts"] or 0,
            )
            result.weeks.append(await _one_week(conn, settings, store, week, checkpoint))
        result.pending = len(await conn.fetch(q("archive_due_weeks"), settings.hot_retention))
        return result
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _ARCHIVE_LOCK)


async def _adopt(conn: asyncpg.Connection[asyncpg.Record], start: datetime) -> WeekOutcome | None:
    """Makes the week's partitions again, moving its runs and attempts out of the default
    partition into them (as partition maintenance does for the weeks it makes), under the
    tables' locks so that no reader misses a moving row; a failure (the locks not granted in
    time) leaves the runs where readers find them until the next pass."""
    end = start + timedelta(days=7)
    try:
        async with conn.transaction():
            await conn.execute(f"SET LOCAL lock_timeout = '{DROP_LOCK_TIMEOUT}'")
            await conn.execute("LOCK TABLE runs, attempts IN ACCESS EXCLUSIVE MODE")
            for base in ("runs", "attempts"):
                part = f"{base}_{start.astimezone(UTC):%Y%m%d}"
                await conn.execute(
                    "SELECT duetime_make_week_partition($1, $2, $3, $4)", base, part, start, end
                )
    except asyncpg.PostgresError as error:
        label = start.astimezone(UTC).isoformat()
        reason = "lock" if isinstance(error, asyncpg.LockNotAvailableError) else "error"
        log.warning(
            "archive week %s: its runs stay in the default partition: %s",
            label,
            error,
            extra={"action": "archive_adopt_failed"},
        )
        return WeekOutcome(label, Outcome.FAILED, reason, f"moving its runs in: {error}")
    log.info(
        "archive week %s: runs moved out of the default partition",
        start.astimezone(UTC).isoformat(),
        extra={"action": "archive_adopt"},
    )
    return None


async def _one_week(
    conn: asyncpg.Connection[asyncpg.Record],
    settings: ArchiveSettings,
    s3: pafs.FileSystem,
    week: Week,
    checkpoint: Checkpoint,
) -> WeekOutcome:
    started = time.monotonic()
    label = week.start.astimezone(UTC).isoformat()
    try:
        outcome = await _archive_week(conn, settings, s3, week, checkpoint)
    except ArchiveUnverified as error:
        outcome = WeekOutcome(label, Outcome.FAILED, "unverified", str(error))
    except asyncpg.LockNotAvailableError as error:
        outcome = WeekOutcome(label, Outcome.FAILED, "lock", str(error))
    except OSError as error:
        # pyarrow's S3 errors are OSErrors (an unreachable endpoint, a refused request).
        outcome = WeekOutcome(label, Outcome.FAILED, "store", str(error))
    except Exception as error:
        log.exception("archiving a week failed", extra={"action": "archive_failed"})
        outcome = WeekOutcome(label, Outcome.FAILED, "error", f"{type(error).__name__}: {error}")
    outcome = WeekOutcome(**{**asdict(outcome), "seconds": round(time.monotonic() - started, 3)})
    level = logging.WARNING if outcome.outcome == Outcome.FAILED else logging.INFO
    log.log(
        level,
        "archive week %s: %s %s",
        label,
        outcome.outcome,
        outcome.detail,
        extra={"action": "archive_week", **asdict(outcome)},
    )
    return outcome


async def _archive_week(
    conn: asyncpg.Connection[asyncpg.Record],
    settings: ArchiveSettings,
    s3: pafs.FileSystem,
    week: Week,
    checkpoint: Checkpoint,
) -> WeekOutcome:
    label = week.start.astimezone(UTC).isoformat()
    laps = Laps()
    await _watch(conn, week)
    data_key = settings.key(week.object_key)

    def earlier(snapshot: Snapshot) -> Manifest | None:
        manifest = objects.read_manifest(s3, settings.key(manifest_key(week.start)))
        if manifest is None or not _still_valid(s3, data_key, manifest, snapshot):
            return None
        return manifest

    with tempfile.TemporaryDirectory(prefix="duetime-archive-") as folder:
        export = await _export(conn, s3, settings, week, Path(folder), earlier, laps)
        snapshot, manifest = export.snapshot, export.manifest
        if snapshot.in_flight:
            return WeekOutcome(label, Outcome.IN_FLIGHT, detail="runs still in flight")
        resumed = manifest is not None
        if manifest is None:
            assert export.parquet is not None
            manifest = await _write(s3, settings, week, snapshot, export.parquet, checkpoint, laps)
    dropped = await _drop(conn, week, snapshot, manifest)
    laps.lap("drop")
    if not dropped:
        return WeekOutcome(
            label, Outcome.CHANGED, detail="written to since the export", steps=laps.steps
        )
    if week.archived_key is not None:
        _delete_replaced(s3, settings.key(week.archived_key))
    return WeekOutcome(
        label,
        Outcome.ARCHIVED,
        runs=snapshot.runs,
        attempts=snapshot.attempts,
        resumed=resumed,
        steps=laps.steps,
    )


def _delete_replaced(s3: pafs.FileSystem, key: str) -> None:
    """The object a week's new one replaced: readers read the new one from the drop's commit
    on. One left behind (the store failed) holds nothing the new one does not."""
    try:
        s3.delete_file(key)
    except OSError as error:
        log.warning(
            "a replaced archive object stays: %s", error, extra={"action": "archive_replaced"}
        )


async def _watch(conn: asyncpg.Connection[asyncpg.Record], week: Week) -> None:
    """The week's row and its partitions' watch triggers (each created once)."""
    async with conn.transaction():
        await conn.execute(f"SET LOCAL lock_timeout = '{DROP_LOCK_TIMEOUT}'")
        await conn.execute(q("archive_week_begin"), week.start, week.end)
        for table in (week.runs_table, week.attempts_table):
            if await conn.fetchval("SELECT to_regclass($1)", table) is None:
                continue
            if await conn.fetchval(q("archive_week_watched"), table):
                continue
            # Waits for the writes in progress on the partition, so every later one is counted.
            await conn.execute(
                "CREATE TRIGGER duetime_archive_watch AFTER INSERT OR UPDATE OR DELETE "
                f'ON "{table}" FOR EACH ROW '
                f"EXECUTE FUNCTION duetime_archive_watch('{week.start.isoformat()}')"
            )


@dataclass(frozen=True)
class Export:
    snapshot: Snapshot
    # An earlier pass's manifest that still holds (nothing to write), or the week's rows as a
    # Parquet file (neither while runs are in flight).
    manifest: Manifest | None = None
    parquet: Path | None = None


async def _export(
    conn: asyncpg.Connection[asyncpg.Record],
    s3: pafs.FileSystem,
    settings: ArchiveSettings,
    week: Week,
    folder: Path,
    earlier: Callable[[Snapshot], Manifest | None],
    laps: Laps,
) -> Export:
    """The week's counts as of one snapshot and, unless ``earlier`` finds them archived
    already, its rows as of the same snapshot, as a Parquet file in ``folder``; for a week
    archived before, with the runs of its object (counted in the snapshot too)."""
    runs_csv, attempts_csv = folder / "runs.csv", folder / "attempts.csv"
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        await conn.execute("SET LOCAL TimeZone = 'UTC'")
        changes = await conn.fetchval(q("archive_week_changes"), week.start)
        in_flight = await conn.fetchval(
            f'SELECT EXISTS (SELECT 1 FROM "{week.runs_table}" '
            "WHERE state IN ('QUEUED', 'WAITING', 'RUNNING', 'RETRY_WAIT'))"
        )
        runs = await conn.fetchval(f'SELECT count(*) FROM "{week.runs_table}"')
        # A week made again in the default partition (a backfill) may have no attempts table.
        attempts_table: str | None = week.attempts_table
        if await conn.fetchval("SELECT to_regclass($1)", week.attempts_table) is None:
            attempts_table = None
        attempts = await conn.fetchval(attempts_count_query(week.runs_table, attempts_table))
        snapshot = Snapshot(
            changes, in_flight, runs + week.archived_runs, attempts + week.archived_attempts
        )
        if in_flight:
            return Export(snapshot)
        manifest = earlier(snapshot)
        if manifest is not None:
            return Export(snapshot, manifest)
        await copy_out(conn, runs_query(week.runs_table), runs_csv)
        await copy_out(conn, attempts_query(week.runs_table, attempts_table), attempts_csv)
    laps.lap("export")
    table = read_week(runs_csv, attempts_csv)
    runs_csv.unlink()
    attempts_csv.unlink()
    if week.archived_key is not None:
        archived = pq.read_table(settings.key(week.archived_key), filesystem=s3, schema=SCHEMA)
        merged = pa.concat_tables([archived, table])
        table = merged.sort_by([(key, "ascending") for key in SORT_KEYS])
    parquet = folder / "runs.parquet"
    objects.write_parquet(table, parquet)
    laps.lap("parquet")
    return Export(snapshot, parquet=parquet)


async def _write(
    s3: pafs.FileSystem,
    settings: ArchiveSettings,
    week: Week,
    snapshot: Snapshot,
    parquet: Path,
    checkpoint: Checkpoint,
    laps: Laps,
) -> Manifest:
    data_key = settings.key(week.object_key)
    written = objects.file_digest(parquet)
    objects.upload(s3, parquet, data_key)
    laps.lap("upload")
    await checkpoint("uploaded", data_key)
    objects.verify_object(s3, data_key, written, snapshot.runs, snapshot.attempts)
    laps.lap("verify")
    low, high = _nominal_range(parquet)
    manifest = Manifest(
        schema_version=SCHEMA_VERSION,
        week_start=week.start.astimezone(UTC).isoformat(),
        week_end=week.end.astimezone(UTC).isoformat(),
        object_key=week.object_key,
        runs=snapshot.runs,
        attempts=snapshot.attempts,
        nominal_time_min=low,
        nominal_time_max=high,
        object_bytes=written.bytes,
        sha256=written.sha256,
        changes=snapshot.changes,
        write_time=datetime.now(UTC).isoformat(),
    )
    objects.write_manifest(s3, settings.key(manifest_key(week.start)), manifest)
    await checkpoint("manifest", data_key)
    return manifest


def _nominal_range(parquet: Path) -> tuple[str, str]:
    times = pq.read_table(parquet, columns=["nominal_time"])["nominal_time"]
    if len(times) == 0:
        return "", ""
    bounds = pc.min_max(times)
    return bounds["min"].as_py().isoformat(), bounds["max"].as_py().isoformat()


def _still_valid(
    s3: pafs.FileSystem, data_key: str, manifest: Manifest, snapshot: Snapshot
) -> bool:
    """Whether a manifest left by an earlier pass describes these partitions (same change
    count and counts) and its object still verifies: then nothing needs writing again."""
    if (manifest.schema_version, manifest.changes, manifest.runs, manifest.attempts) != (
        SCHEMA_VERSION,
        snapshot.changes,
        snapshot.runs,
        snapshot.attempts,
    ):
        return False
    try:
        objects.verify_object(
            s3,
            data_key,
            Written(manifest.object_bytes, manifest.sha256),
            manifest.runs,
            manifest.attempts,
        )
    except ArchiveUnverified as error:
        log.warning(
            "an earlier archive of the week does not verify; writing it again: %s",
            error,
            extra={"action": "archive_rewrite"},
        )
        return False
    return True


async def _drop(
    conn: asyncpg.Connection[asyncpg.Record],
    week: Week,
    snapshot: Snapshot,
    manifest: Manifest,
) -> bool:
    """Records the week archived and drops its partitions, if nothing was written to them
    since the export; False (nothing done) otherwise."""
    async with conn.transaction():
        await conn.execute(f"SET LOCAL lock_timeout = '{DROP_LOCK_TIMEOUT}'")
        # The parents first, as DROP takes them; then no write to the week is in progress.
        await conn.execute("LOCK TABLE ONLY runs, ONLY attempts IN ACCESS EXCLUSIVE MODE")
        changes = await conn.fetchval(q("archive_week_changes_locked"), week.start)
        if changes != snapshot.changes:
            return False
        await conn.execute(
            q("archive_week_done"),
            week.start,
            manifest.object_key,
            manifest_key(week.start),
            manifest.runs,
            manifest.attempts,
            manifest.sha256,
            manifest.schema_version,
        )
        await conn.execute(f'DROP TABLE "{week.runs_table}"')
        await conn.execute(f'DROP TABLE IF EXISTS "{week.attempts_table}"')
    return True
