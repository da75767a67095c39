"""A week's partitions out of PostgreSQL into one Arrow table of the archive's schema.

PostgreSQL writes the rows as CSV (COPY, the fastest way out of it) to local files, Arrow's
multi-threaded CSV reader types them, and the attempts are nested under their runs by
vectorised joins and sorts: no row passes through Python.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from duetime_infra.archive.layout import ATTEMPT_FIELDS, RUN_FIELDS, SCHEMA, SORT_KEYS
from duetime_infra.pg.pool import Conn

_PARTITION = re.compile(r"^(runs|attempts)_\d{8}$")
_RUN_KEY = ("run_id", "nominal_time")


def _table(name: str) -> str:
    if not _PARTITION.match(name):
        raise ValueError(f"not a week's partition: {name!r}")
    return f'"{name}"'


# Columns read from others: a run's trace id from its trace context, in whichever form its row
# keeps it (duetime_run_trace_id, schema 31); its claim proof from its token (schema 30,
# claim_tokens) or, as claimed before, its own columns ('' and 0 for a run no scheduler
# claimed).
_DERIVED = {
    "trace_id": "duetime_run_trace_id(r.run_id, r.trace_context, r.traceparent) AS trace_id",
    "claimed_by": "coalesce(r.claimed_by, t.holder, '') AS claimed_by",
    "claim_epoch": "coalesce(r.claim_epoch, t.epoch, 0) AS claim_epoch",
    "claim_revision": "coalesce(r.claim_revision, t.revision, 0) AS claim_revision",
}


def runs_query(runs_table: str) -> str:
    columns = ", ".join(_DERIVED.get(f.name, f"r.{f.name}") for f in RUN_FIELDS)
    return (
        f"SELECT {columns} FROM {_table(runs_table)} r "
        "LEFT JOIN claim_tokens t ON t.token_id = r.claim_token_id"
    )


def _latest(name: str) -> str:
    """An attempt's column as a run's row holds its latest attempt (schema 27)."""
    if name in _RUN_KEY:
        return name
    if name == "number":
        return "attempt AS number"
    return f"attempt_{name} AS {name}"


def attempts_query(runs_table: str, attempts_table: str | None) -> str:
    """The week's attempts: those before each run's latest (the attempts partition, if the
    week has one) and each run's latest, from its row."""
    names = ("run_id", "nominal_time", *(f.name for f in ATTEMPT_FIELDS))
    latest = (
        f"SELECT {', '.join(map(_latest, names))} FROM {_table(runs_table)} "
        "WHERE attempt_start_time IS NOT NULL"
    )
    if attempts_table is None:
        return latest
    return f"SELECT {', '.join(names)} FROM {_table(attempts_table)} UNION ALL {latest}"


def attempts_count_query(runs_table: str, attempts_table: str | None) -> str:
    return f"SELECT count(*) FROM ({attempts_query(runs_table, attempts_table)}) a"


async def copy_out(conn: Conn, query: str, path: Path) -> None:
    """``query``'s rows as CSV in ``path`` (times in UTC: the session's zone must be UTC)."""
    await conn.copy_from_query(query, output=path, format="csv")


# Texts of a few values each, read as dictionaries (a tenth of the memory while the week is
# sorted and nested) and written as plain text, which Parquet dictionary-encodes anyway.
_FEW_VALUES = frozenset(
    {"origin", "state", "reason", "priority", "claimed_by", "quota_limit", "worker_id",
     "outcome", "call_progress", "cancel_reason"}
)  # fmt: skip
_WORDS = pa.dictionary(pa.int32(), pa.string())


def _read_type(f: pa.Field) -> pa.DataType:
    return _WORDS if f.name in _FEW_VALUES else f.type


def _read_csv(path: Path, fields: tuple[pa.Field, ...]) -> pa.Table:
    if path.stat().st_size == 0:
        return pa.schema([f.with_type(_read_type(f)) for f in fields]).empty_table()
    table = pacsv.read_csv(
        path,
        read_options=pacsv.ReadOptions(column_names=[f.name for f in fields], block_size=16 << 20),
        # Error texts may hold line breaks (quoted by COPY).
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types={f.name: _read_type(f) for f in fields},
            # COPY writes NULL as nothing and an empty text as "".
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
            true_values=["t"],
            false_values=["f"],
        ),
    )
    # Each block read in parallel has its own dictionaries; joins and sorts want one.
    return table.unify_dictionaries()


def _row_numbers(count: int) -> pa.Array:
    ones = pc.fill_null(pa.nulls(count, pa.int64()), 1)
    return pc.subtract(pc.cumulative_sum(ones), 1)


def _plain(column: pa.ChunkedArray, kind: pa.DataType) -> pa.ChunkedArray:
    return column if column.type == kind else column.cast(kind)


def nest(runs: pa.Table, attempts: pa.Table) -> pa.Table:
    """The runs sorted by team, job, nominal time and run id, each with its attempts (by
    number) as a list; an attempt without its run is an error, never dropped. Each
    intermediate table is let go as soon as the next is made: a week is gigabytes."""
    runs = runs.sort_by([(key, "ascending") for key in SORT_KEYS])
    count = runs.num_rows
    keys = runs.select(list(_RUN_KEY)).append_column("_row", _row_numbers(count))
    placed = attempts.join(keys, keys=list(_RUN_KEY), join_type="inner")
    if placed.num_rows != attempts.num_rows:
        raise ValueError(
            f"{attempts.num_rows - placed.num_rows} attempts have no run in the week's runs"
        )
    del attempts
    placed = placed.sort_by([("_row", "ascending"), ("number", "ascending")])
    per_run = placed.group_by("_row").aggregate([("number", "count")])
    # Runs without attempts count 0: every row number once more, with 0, then summed.
    every_run = pa.table({"_row": keys["_row"], "number_count": pc.multiply(keys["_row"], 0)})
    counts = (
        pa.concat_tables([per_run, every_run])
        .group_by("_row")
        .aggregate([("number_count", "sum")])
        .sort_by("_row")
    )
    offsets = pa.concat_arrays(
        [
            pa.array([0], pa.int32()),
            pc.cumulative_sum(counts["number_count_sum"]).combine_chunks().cast(pa.int32()),
        ]
    )
    del keys, per_run, every_run, counts
    values = pa.StructArray.from_arrays(
        [_plain(placed[f.name], f.type).combine_chunks() for f in ATTEMPT_FIELDS],
        fields=list(ATTEMPT_FIELDS),
    )
    del placed
    nested = pa.ListArray.from_arrays(offsets, values, type=SCHEMA.field("attempts").type)
    columns = [_plain(runs[f.name], f.type) for f in RUN_FIELDS]
    return pa.Table.from_arrays([*columns, pa.chunked_array([nested])], schema=SCHEMA)


def read_week(runs_csv: Path, attempts_csv: Path) -> pa.Table:
    return nest(_read_csv(runs_csv, RUN_FIELDS), _read_csv(attempts_csv, _attempt_columns()))


def _attempt_columns() -> tuple[pa.Field, ...]:
    run = {f.name: f for f in RUN_FIELDS}
    return (run["run_id"], run["nominal_time"], *ATTEMPT_FIELDS)
