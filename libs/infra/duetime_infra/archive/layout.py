"""What an archived week is: one Parquet object of its runs, each with its attempts nested, and
a manifest written after it; where both live under the archive's prefix.

One table with nested attempts rather than two files: every reader of archived history (GetRun,
ListRuns, an export) wants a run together with its attempts, so a read of a job's day is one
filtered scan with no join; the object is complete on its own, and one manifest and one read
back verify both counts. Rows are sorted by team, job and nominal time, so row-group
statistics let a reader skip everything but the team's or the job's rows.

Kept out of the archive: the partition (a hash of the job id), the trace context handed to the
target (traceparent and trace_context; trace_id is kept) and the broker's delivery ids
(start_delivery_id, delivery_id), which serve only runs in flight.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from datetime import datetime

import pyarrow as pa

# Raised when the columns change; a reader refuses an object of a version it does not know.
SCHEMA_VERSION = 1

_TIME = pa.timestamp("us", tz="UTC")

# Attempts as the archive keeps them, in the order of the export's columns.
ATTEMPT_FIELDS: tuple[pa.Field, ...] = (
    pa.field("number", pa.int32(), nullable=False),
    pa.field("worker_id", pa.string(), nullable=False),
    pa.field("start_time", _TIME, nullable=False),
    pa.field("lease_expire_time", _TIME, nullable=False),
    pa.field("deadline", _TIME, nullable=False),
    pa.field("end_time", _TIME),
    pa.field("outcome", pa.string()),
    pa.field("error", pa.string(), nullable=False),
    pa.field("cancel_reason", pa.string(), nullable=False),
    pa.field("call_progress", pa.string()),
    pa.field("early", pa.bool_(), nullable=False),
)

# Runs, in the order of the export's columns; the sort keys first.
RUN_FIELDS: tuple[pa.Field, ...] = (
    pa.field("team_id", pa.string(), nullable=False),
    pa.field("job_id", pa.string(), nullable=False),
    pa.field("nominal_time", _TIME, nullable=False),
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("origin", pa.string(), nullable=False),
    pa.field("effective_time", _TIME, nullable=False),
    pa.field("state", pa.string(), nullable=False),
    pa.field("reason", pa.string(), nullable=False),
    pa.field("reason_detail", pa.string(), nullable=False),
    pa.field("attempt", pa.int32(), nullable=False),
    pa.field("attempt_limit", pa.int32(), nullable=False),
    pa.field("budget_start_attempt", pa.int32(), nullable=False),
    pa.field("next_attempt_time", _TIME),
    pa.field("first_start_time", _TIME),
    pa.field("range_end_time", _TIME),
    pa.field("occurrence_count", pa.int32(), nullable=False),
    pa.field("trace_id", pa.string(), nullable=False),
    pa.field("job_version", pa.int64(), nullable=False),
    pa.field("priority", pa.string(), nullable=False),
    pa.field("claimed_by", pa.string(), nullable=False),
    pa.field("claim_epoch", pa.int64(), nullable=False),
    pa.field("claim_revision", pa.int64(), nullable=False),
    pa.field("create_time", _TIME, nullable=False),
    pa.field("update_time", _TIME, nullable=False),
    pa.field("eligible_time", _TIME),
    pa.field("quota_limit", pa.string(), nullable=False),
)

ATTEMPT = pa.struct(list(ATTEMPT_FIELDS))
SCHEMA = pa.schema(
    [*RUN_FIELDS, pa.field("attempts", pa.list_(pa.field("item", ATTEMPT, nullable=False)))],
    metadata={"duetime.schema_version": str(SCHEMA_VERSION)},
)
SORT_KEYS = ("team_id", "job_id", "nominal_time", "run_id")


def week_folder(week_start: datetime) -> str:
    return f"weeks/{week_start.strftime('%Y-%m-%d')}"


def object_key(week_start: datetime, after: str | None = None) -> str:
    """The week's Parquet object, relative to the archive's prefix: the same on every try, so
    a pass resumed after a crash replaces what the crashed one left, never adds to it. A week
    archived again (runs written to it after its archive: a backfill) gets the key after the
    one it has (``after``), so readers keep reading the old object until the new one is in."""
    if after is None:
        return f"{week_folder(week_start)}/runs.parquet"
    generation = re.fullmatch(r".*/runs(?:\.(\d+))?\.parquet", after)
    if generation is None:
        raise ValueError(f"not a week's object key: {after!r}")
    return f"{week_folder(week_start)}/runs.{int(generation.group(1) or 0) + 1}.parquet"


def manifest_key(week_start: datetime) -> str:
    return f"{week_folder(week_start)}/manifest.json"


@dataclass(frozen=True)
class Manifest:
    """Written after the object verified: what it holds and how to check it."""

    schema_version: int
    week_start: str
    week_end: str
    object_key: str
    runs: int
    attempts: int
    # The earliest and latest nominal time among the runs ("" for an empty week).
    nominal_time_min: str
    nominal_time_max: str
    object_bytes: int
    sha256: str
    # The week's change count (archive_weeks.changes) the export saw.
    changes: int
    write_time: str

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=2).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Manifest:
        document = json.loads(data)
        return cls(**{name: document[name] for name in cls.__dataclass_fields__})
