"""``duetime runs export``: runs written to a file for analysts, page by page as ListRuns
returns them (archived weeks included), as CSV (one line a run, its last attempt's outcome
beside the count) or Parquet (typed columns, the attempts nested, zstd)."""

from __future__ import annotations

import csv
import enum
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from google.protobuf.timestamp_pb2 import Timestamp

from duetime.jobs.v1 import run_pb2


class ExportFormat(enum.StrEnum):
    CSV = "csv"
    PARQUET = "parquet"


_TIME = pa.timestamp("us", tz="UTC")
_ATTEMPT = pa.struct(
    [
        pa.field("number", pa.int32()),
        pa.field("worker_id", pa.string()),
        pa.field("start_time", _TIME),
        pa.field("end_time", _TIME),
        pa.field("outcome", pa.string()),
        pa.field("error", pa.string()),
    ]
)
# Each column, its Arrow type, and how it is read from a Run.
_COLUMNS: list[tuple[str, pa.DataType, Callable[[run_pb2.Run], Any]]] = [
    ("job_id", pa.string(), lambda r: r.job_id),
    ("run_id", pa.string(), lambda r: r.run_id),
    ("nominal_time", _TIME, lambda r: _time(r, "nominal_time")),
    ("effective_time", _TIME, lambda r: _time(r, "effective_time")),
    ("origin", pa.string(), lambda r: run_pb2.RunOrigin.Name(r.origin).removeprefix("RUN_ORIGIN_")),
    ("trigger_request_id", pa.string(), lambda r: r.trigger_request_id),
    ("state", pa.string(), lambda r: run_pb2.RunState.Name(r.state).removeprefix("RUN_STATE_")),
    ("reason", pa.string(), lambda r: run_pb2.RunReason.Name(r.reason).removeprefix("RUN_REASON_")),
    ("reason_detail", pa.string(), lambda r: r.reason_detail),
    ("attempt", pa.int32(), lambda r: r.attempt),
    (
        "start_lateness_seconds",
        pa.float64(),
        lambda r: (
            r.start_lateness.ToTimedelta().total_seconds() if r.HasField("start_lateness") else None
        ),
    ),
    ("next_attempt_time", _TIME, lambda r: _time(r, "next_attempt_time")),
    ("range_end_time", _TIME, lambda r: _time(r, "range_end_time")),
    ("occurrence_count", pa.int32(), lambda r: r.occurrence_count),
    ("eligible_time", _TIME, lambda r: _time(r, "eligible_time")),
    ("quota_delay_seconds", pa.float64(), lambda r: r.quota_delay.ToTimedelta().total_seconds()),
    ("trace_id", pa.string(), lambda r: r.trace_id),
    ("create_time", _TIME, lambda r: _time(r, "create_time")),
    ("update_time", _TIME, lambda r: _time(r, "update_time")),
]
SCHEMA = pa.schema(
    [pa.field(name, kind) for name, kind, _ in _COLUMNS]
    + [pa.field("attempts", pa.list_(_ATTEMPT))]
)
# CSV has no nesting: the count and the last attempt instead.
CSV_COLUMNS = [name for name, _, _ in _COLUMNS] + [
    "attempts",
    "last_outcome",
    "last_worker_id",
    "last_error",
]


def _time(message: Any, name: str) -> datetime | None:
    if not message.HasField(name):
        return None
    stamp: Timestamp = getattr(message, name)
    return stamp.ToDatetime(tzinfo=UTC)


def _attempts(run: run_pb2.Run) -> list[dict[str, Any]]:
    return [
        {
            "number": a.number,
            "worker_id": a.worker,
            "start_time": _time(a, "start_time"),
            "end_time": _time(a, "end_time"),
            "outcome": run_pb2.AttemptOutcome.Name(a.outcome).removeprefix("ATTEMPT_OUTCOME_")
            if a.outcome
            else None,
            "error": a.error,
        }
        for a in run.attempts
    ]


def write_runs(pages: Iterator[list[run_pb2.Run]], path: Path, fmt: ExportFormat) -> int:
    """Writes every page to ``path``; the runs written."""
    if fmt is ExportFormat.CSV:
        return _write_csv(pages, path)
    return _write_parquet(pages, path)


def _write_csv(pages: Iterator[list[run_pb2.Run]], path: Path) -> int:
    count = 0
    with path.open("w", newline="", encoding="utf-8") as file:
        out = csv.writer(file)
        out.writerow(CSV_COLUMNS)
        for page in pages:
            for run in page:
                attempts = _attempts(run)
                last = attempts[-1] if attempts else {}
                values = [read(run) for _, _, read in _COLUMNS] + [
                    len(attempts),
                    last.get("outcome"),
                    last.get("worker_id"),
                    last.get("error"),
                ]
                out.writerow(_cell(v) for v in values)
                count += 1
    return count


def _cell(value: Any) -> Any:
    """RFC 3339 for a time, empty for a missing value."""
    if value is None:
        return ""
    return value.isoformat() if isinstance(value, datetime) else value


def _write_parquet(pages: Iterator[list[run_pb2.Run]], path: Path) -> int:
    count = 0
    with pq.ParquetWriter(path, SCHEMA, compression="zstd") as writer:
        for page in pages:
            if not page:
                continue
            columns = {name: [read(r) for r in page] for name, _, read in _COLUMNS}
            columns["attempts"] = [_attempts(r) for r in page]
            writer.write_table(pa.Table.from_pydict(columns, schema=SCHEMA))
            count += len(page)
    return count
