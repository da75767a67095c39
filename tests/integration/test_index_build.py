"""Migrations' index builds do not block writes, and finish what a cut-off build left."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

from duetime_infra.pg.index_build import IndexBuild, build_index, index_builds
from testkit.polling import eventually

BUILD = IndexBuild("runs_probe_time_idx", "runs", "(update_time) WHERE state = 'QUEUED'")


@pytest.fixture
async def conns(db_dsn: str) -> AsyncIterator[list[asyncpg.Connection]]:
    opened = [await asyncpg.connect(db_dsn) for _ in range(3)]
    yield opened
    for conn in opened:
        await conn.close()


async def _partitions(conn: asyncpg.Connection) -> list[str]:
    rows = await conn.fetch(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = 'runs'::regclass ORDER BY 1"
    )
    return [r["relname"] for r in rows]


async def _attached(conn: asyncpg.Connection, index: str) -> dict[str, bool]:
    """Each partition's index attached to ``index``: the partition, and whether it is valid."""
    rows = await conn.fetch(
        "SELECT t.relname, x.indisvalid FROM pg_inherits i "
        "JOIN pg_index x ON x.indexrelid = i.inhrelid JOIN pg_class t ON t.oid = x.indrelid "
        "WHERE i.inhparent = $1::regclass",
        index,
    )
    return {r["relname"]: r["indisvalid"] for r in rows}


async def _valid(conn: asyncpg.Connection, index: str) -> bool | None:
    return await conn.fetchval(  # type: ignore[no-any-return]
        "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)", index
    )


def test_a_migration_names_its_concurrent_builds() -> None:
    sql = (
        "-- why\n-- build-concurrently: a_idx ON runs (x, y) WHERE state = 'QUEUED'\n"
        "DROP INDEX b_idx;\n"
    )
    assert index_builds(sql) == [IndexBuild("a_idx", "runs", "(x, y) WHERE state = 'QUEUED'")]
    with pytest.raises(ValueError, match="unreadable"):
        index_builds("-- build-concurrently: A-idx ON runs (x)\n")


async def test_a_build_leaves_writes_free_and_covers_every_partition(
    conns: list[asyncpg.Connection],
) -> None:
    builder, holder, writer = conns
    first = (await _partitions(builder))[0]
    # A writer's transaction is open on a partition: its build waits for it, as any index
    # build does. (The parent's index, ON ONLY and built on nothing, takes the table's lock
    # for a moment: the migrator's lock timeout bounds that wait.)
    holding = holder.transaction()
    await holding.start()
    await holder.execute(f"LOCK TABLE {first} IN ROW EXCLUSIVE MODE")
    building = asyncio.create_task(build_index(builder, BUILD))
    pid = builder.get_server_pid()

    async def waiting() -> bool:
        return bool(
            await writer.fetchval(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted)", pid
            )
        )

    await eventually(waiting, 10, "the build waits for the open writer", interval=0.01)
    # Meanwhile other writers get in at once (a plain CREATE INDEX's queued SHARE lock would
    # turn this NOWAIT away).
    async with writer.transaction():
        await writer.execute(f"LOCK TABLE runs, {first} IN ROW EXCLUSIVE MODE NOWAIT")
    assert not building.done()
    await holding.commit()
    await asyncio.wait_for(building, 60)
    assert await _valid(builder, BUILD.name)
    assert await _attached(builder, BUILD.name) == dict.fromkeys(await _partitions(builder), True)
    await build_index(builder, BUILD)  # done: nothing more to build
    assert await _valid(builder, BUILD.name)


async def test_a_build_cut_off_is_finished_by_the_next(conns: list[asyncpg.Connection]) -> None:
    conn = conns[0]
    first = (await _partitions(conn))[0]
    # As a cut-off build leaves it: the parent made, one partition's index built but not yet
    # attached, the others not begun.
    await conn.execute(f"CREATE INDEX {BUILD.name} ON ONLY runs {BUILD.definition}")
    await conn.execute(
        f"CREATE INDEX CONCURRENTLY {first}_probe_time_idx ON {first} {BUILD.definition}"
    )
    assert await _valid(conn, BUILD.name) is False
    await build_index(conn, BUILD)
    assert await _valid(conn, BUILD.name)
    assert await _attached(conn, BUILD.name) == dict.fromkeys(await _partitions(conn), True)


async def test_an_invalid_index_a_failed_build_left_is_built_again(
    conns: list[asyncpg.Connection],
) -> None:
    conn = conns[0]
    await conn.execute("CREATE TABLE probe_rows AS SELECT 1 AS k UNION ALL SELECT 1")
    # A concurrent build that fails (two equal keys for a unique index) leaves its index
    # behind, invalid.
    with pytest.raises(asyncpg.UniqueViolationError):
        await conn.execute("CREATE UNIQUE INDEX CONCURRENTLY probe_k_idx ON probe_rows (k)")
    assert await _valid(conn, "probe_k_idx") is False
    await build_index(conn, IndexBuild("probe_k_idx", "probe_rows", "(k)"))
    assert await _valid(conn, "probe_k_idx")
    assert not await conn.fetchval(
        "SELECT indisunique FROM pg_index WHERE indexrelid = 'probe_k_idx'::regclass"
    )
