"""Index builds that do not block writes, for migrations: ``CREATE INDEX CONCURRENTLY``, and on
a partitioned table one partition at a time (PostgreSQL builds an index on a partitioned table
only in one statement that holds its lock, blocking writes, for the whole build).

A migration names such an index in a line ``-- build-concurrently: NAME ON TABLE (columns)
[WHERE ...]``. On a partitioned table the index is made ``ON ONLY`` the table (invalid, nothing
built), each partition's is built concurrently and attached, and the parent turns valid once
every partition's is; a partition attached meanwhile gets its own from ATTACH PARTITION. Each
step is re-runnable: a build cut off (a lock timeout, a lost connection) leaves an invalid
index, dropped and built again on the next try.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from duetime_infra.pg.pool import Conn

_DIRECTIVE = re.compile(r"^-- build-concurrently: ([a-z_][a-z0-9_]*) ON ([a-z_][a-z0-9_]*) (\(.+)$")
_LONGEST_NAME = 63  # PostgreSQL's NAMEDATALEN - 1

_PARTITIONS_WITHOUT = """
SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = $1::regclass
  AND NOT EXISTS (SELECT 1 FROM pg_inherits ii JOIN pg_index x ON x.indexrelid = ii.inhrelid
                  WHERE ii.inhparent = $2::regclass AND x.indrelid = c.oid)
ORDER BY c.relname
"""


@dataclass(frozen=True)
class IndexBuild:
    name: str
    table: str
    # What follows the table in CREATE INDEX: the columns, and the predicate if any.
    definition: str


def index_builds(sql: str) -> list[IndexBuild]:
    """The ``-- build-concurrently:`` lines of a migration's file."""
    builds = []
    for line in sql.splitlines():
        if not line.startswith("-- build-concurrently:"):
            continue
        found = _DIRECTIVE.match(line.rstrip())
        if found is None or len(found[1]) > _LONGEST_NAME:
            raise ValueError(f"unreadable build-concurrently line: {line!r}")
        builds.append(IndexBuild(found[1], found[2], found[3]))
    return builds


async def build_index(conn: Conn, build: IndexBuild) -> None:
    """Builds ``build`` without blocking writes to its table; nothing when it exists and is
    valid. ``conn`` must not be in a transaction."""
    kind = await conn.fetchval(
        "SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1)", build.table
    )
    if kind is None:
        raise ValueError(f"no table {build.table!r} to index")
    if kind != "p":
        await _build_concurrently(conn, build.name, build.table, build.definition)
        return
    await conn.execute(
        f"CREATE INDEX IF NOT EXISTS {build.name} ON ONLY {build.table} {build.definition}"
    )
    for partition in await conn.fetch(_PARTITIONS_WITHOUT, build.table, build.name):
        child = _child_name(partition["relname"], build.name)
        await _build_concurrently(conn, child, partition["relname"], build.definition)
        await conn.execute(f"ALTER INDEX {build.name} ATTACH PARTITION {child}")
    valid = await conn.fetchval(
        "SELECT indisvalid FROM pg_index WHERE indexrelid = $1::regclass", build.name
    )
    if not valid:  # every partition had its index attached: PostgreSQL validates the parent
        raise RuntimeError(f"index {build.name} still invalid after every partition's build")


async def _build_concurrently(conn: Conn, name: str, table: str, definition: str) -> None:
    valid = await conn.fetchval(
        "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)", name
    )
    if valid:
        return
    if valid is not None:  # a build cut off: its invalid index is dropped and built again
        await conn.execute(f"DROP INDEX CONCURRENTLY {name}")
    await conn.execute(f"CREATE INDEX CONCURRENTLY {name} ON {table} {definition}")


def _child_name(partition: str, index: str) -> str:
    """A partition's index, named as the table's: runs_20261130_retry_due_time_idx."""
    name = f"{partition}_{index.removeprefix(partition.split('_')[0] + '_')}"
    if len(name) > _LONGEST_NAME:
        raise ValueError(f"index name {name!r} longer than {_LONGEST_NAME} characters")
    return name
