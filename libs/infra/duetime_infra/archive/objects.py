"""The archive's objects in S3-compatible storage, through pyarrow's own S3 filesystem (the
same library writes and reads the Parquet, so the archive needs no second S3 client).

A week's object is written to a local file first (its size and SHA-256 known before it is
sent), uploaded, then read back whole: the bytes must hash the same and the Parquet in them
must hold the runs and attempts the partitions held.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from duetime_infra.archive.layout import SCHEMA_VERSION, SORT_KEYS, Manifest
from duetime_infra.archive.settings import ArchiveSettings

# The columns readers filter on (the scope, the page position, ListRuns' filter fields).
FILTERED = (
    "team_id", "job_id", "nominal_time", "run_id", "state", "origin", "reason",
    "first_start_time",
)  # fmt: skip
# Rows per row group: a reader of one job's day decodes about one group.
ROW_GROUP_ROWS = 64 * 1024
_CHUNK = 8 << 20


class ArchiveUnverified(Exception):
    """What was read back is not what was written (or the store could not be read)."""


def filesystem(settings: ArchiveSettings) -> pafs.S3FileSystem:
    options: dict[str, object] = {
        "region": settings.region,
        # An unreachable store fails the pass in seconds, not after the SDK's long defaults.
        "connect_timeout": 5,
        "request_timeout": 60,
        "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=3),
    }
    if settings.endpoint_url:
        parts = urlsplit(settings.endpoint_url)
        options.update(endpoint_override=parts.netloc, scheme=parts.scheme)
    if settings.access_key_id:
        options.update(access_key=settings.access_key_id, secret_key=settings.secret_access_key)
    return pafs.S3FileSystem(**options)


def write_parquet(table: pa.Table, path: Path) -> None:
    """zstd over the best encoding of each column: times as deltas (a job's runs, sorted, are
    about evenly spaced, and each run's times are close to its nominal one), everything else
    by dictionary (teams, jobs, states, workers repeat)."""
    times = _time_columns(table.schema)
    pq.write_table(
        table,
        path,
        compression="zstd",
        row_group_size=ROW_GROUP_ROWS,
        # Statistics only where readers filter: a smaller footer to read before the first scan.
        write_statistics=list(FILTERED),
        sorting_columns=[pq.SortingColumn(table.schema.get_field_index(k)) for k in SORT_KEYS],
        use_dictionary=[c for c in _leaf_columns(table.schema) if c not in times],
        column_encoding=dict.fromkeys(times, "DELTA_BINARY_PACKED"),
    )


def _leaf_columns(schema: pa.Schema) -> list[str]:
    leaves = []
    for f in schema:
        if pa.types.is_list(f.type):
            item = f.type.value_type
            leaves += [f"{f.name}.list.element.{g.name}" for g in item]
        else:
            leaves.append(f.name)
    return leaves


def _time_columns(schema: pa.Schema) -> list[str]:
    times = [f.name for f in schema if pa.types.is_timestamp(f.type)]
    for f in schema:
        if pa.types.is_list(f.type):
            item = f.type.value_type
            times += [
                f"{f.name}.list.element.{g.name}" for g in item if pa.types.is_timestamp(g.type)
            ]
    return times


@dataclass(frozen=True)
class Written:
    bytes: int
    sha256: str


def file_digest(path: Path) -> Written:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return Written(size, digest.hexdigest())


def upload(s3: pafs.S3FileSystem, path: Path, key: str) -> None:
    with path.open("rb") as file, s3.open_output_stream(key) as out:
        while chunk := file.read(_CHUNK):
            out.write(chunk)


def read_back(s3: pafs.S3FileSystem, key: str) -> tuple[Written, pa.Buffer]:
    digest = hashlib.sha256()
    parts = []
    with s3.open_input_stream(key) as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
            parts.append(chunk)
    data = b"".join(parts)
    return Written(len(data), digest.hexdigest()), pa.py_buffer(data)


def verify_object(
    s3: pafs.S3FileSystem, key: str, expected: Written, runs: int, attempts: int
) -> None:
    """The object at ``key`` read back whole: its bytes hash as written and its Parquet holds
    ``runs`` runs and ``attempts`` attempts, of this schema version."""
    try:
        found, data = read_back(s3, key)
    except OSError as error:
        raise ArchiveUnverified(f"{key}: cannot be read back: {error}") from error
    if found != expected:
        raise ArchiveUnverified(
            f"{key}: read back {found.bytes} bytes (sha256 {found.sha256[:12]}), "
            f"wrote {expected.bytes} (sha256 {expected.sha256[:12]})"
        )
    check_counts(key, data, runs, attempts)


def check_counts(key: str, data: pa.Buffer, runs: int, attempts: int) -> None:
    parquet = pq.ParquetFile(pa.BufferReader(data))
    version = (parquet.schema_arrow.metadata or {}).get(b"duetime.schema_version")
    if version != str(SCHEMA_VERSION).encode():
        raise ArchiveUnverified(f"{key}: schema version {version!r}, expected {SCHEMA_VERSION}")
    held_runs = parquet.metadata.num_rows
    nested = parquet.read(columns=["attempts"])["attempts"]
    held_attempts = pc.sum(pc.list_value_length(nested)).as_py() or 0
    if (held_runs, held_attempts) != (runs, attempts):
        raise ArchiveUnverified(
            f"{key}: holds {held_runs} runs and {held_attempts} attempts; the week's "
            f"partitions hold {runs} and {attempts}"
        )


def read_manifest(s3: pafs.S3FileSystem, key: str) -> Manifest | None:
    """The manifest at ``key``, or None if there is none (or it does not parse)."""
    try:
        with s3.open_input_stream(key) as stream:
            data = stream.read()
    except FileNotFoundError:
        return None
    try:
        return Manifest.from_json(data)
    except (ValueError, KeyError, TypeError):
        return None


def write_manifest(s3: pafs.S3FileSystem, key: str, manifest: Manifest) -> None:
    with s3.open_output_stream(key) as out:
        out.write(manifest.to_json())
