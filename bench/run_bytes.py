"""bench/run_bytes: the bytes a finished run takes in PostgreSQL, by relation and by column.

Seeds ``--runs`` finished runs (``testkit.history.seed_runs``: 0.5 % dead-lettered with three
attempts, 1 % missed, 2 % triggered) of ``--jobs`` jobs into one week's partition of a fresh
database, VACUUM ANALYZEs it and prints, per finished run, the bytes of the runs heap, each
runs index, the attempts heap, each attempts index and their TOAST, then the average width of
each runs and attempts column (``pg_stats.avg_width``). A full partition freshly loaded: no
dead rows, so a lower bound of steady state. ``bench/archive`` prints the same totals for its
week; bench/steady the bytes a run after its window's VACUUM.

    uv run --frozen python -m bench.run_bytes [--runs 200000] [--jobs 200] [--key-designs]

``--key-designs`` also prints what each of a few index designs for the run key would take: an
empty copy of the week's partition with that one index, filled in the order claims make runs
(by run id, a UUIDv7 led by its making), as the live partition is.

With 1,000 runs a job (the default, as bench/archive's week), each job's index entries fill
their pages as a long history does; with few runs a job they look denser than they will be.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

import asyncpg

from testkit.databases import create_database, drop_database, migrated_template
from testkit.history import seed_runs

TEAMS = 20

_JOBS = """
INSERT INTO jobs (job_id, team_id, partition, state, spec, next_run_time, next_effective_time)
SELECT id, 'team-' || lpad((i % $2)::text, 2, '0'), abs(hashtext(id::text)) % 1024, 'ACTIVE',
       '{"display_name": "bench"}'::jsonb, NULL, NULL
FROM (SELECT i, gen_random_uuid() AS id FROM generate_series(0, $1 - 1) AS i) g
"""

# A table's heap, TOAST (with its index) and each of its indexes, a partition's by the name of
# the table's index it belongs to; every fork of each (the free space and visibility maps too).
_RELATIONS = """
SELECT 'heap' AS kind, c.relname AS name,
       pg_table_size(c.oid) - coalesce(pg_total_relation_size(c.reltoastrelid), 0) AS bytes
FROM pg_class c WHERE c.oid = $1::regclass
UNION ALL
SELECT 'toast', c.relname, coalesce(pg_total_relation_size(c.reltoastrelid), 0)
FROM pg_class c WHERE c.oid = $1::regclass
UNION ALL
SELECT 'index', coalesce(p.relname, i.relname), pg_total_relation_size(i.oid)
FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
LEFT JOIN pg_inherits h ON h.inhrelid = i.oid LEFT JOIN pg_class p ON p.oid = h.inhparent
WHERE x.indrelid = $1::regclass
ORDER BY 1, 2
"""

_WIDTHS = """
SELECT attname, avg_width, null_frac FROM pg_stats
WHERE schemaname = current_schema() AND tablename = $1 ORDER BY attname
"""


# Index designs for the run key (and, for comparison, the other indexes that keep every run).
_KEY_DESIGNS = {
    "run key (job, time, origin), as today": "(job_id, nominal_time, origin)",
    "scheduled runs' key (job, time)": "(job_id, nominal_time) WHERE origin = 'SCHEDULE'",
    "the other runs' key (job, time, origin)": "(job_id, nominal_time, origin) "
    "WHERE origin <> 'SCHEDULE'",
    "primary key (run id, time), as today": "(run_id, nominal_time)",
    "team's index (team, time), as today": "(team_id, nominal_time)",
}


@dataclass(frozen=True)
class Relation:
    kind: str  # 'heap', 'index' or 'toast'
    name: str
    bytes: int


async def relations(conn: asyncpg.Connection, table: str) -> list[Relation]:
    """The heap, TOAST and each index of one table (a partition), with their sizes."""
    rows = await conn.fetch(_RELATIONS, table)
    return [Relation(r["kind"], r["name"], r["bytes"]) for r in rows]


def week_tables(week: datetime) -> tuple[str, str]:
    """The runs and attempts partitions that hold the week beginning at ``week``."""
    suffix = f"{week:%Y%m%d}"
    return f"runs_{suffix}", f"attempts_{suffix}"


async def postgres_bytes(conn: asyncpg.Connection, week: datetime, detail: bool = False) -> float:
    """Prints the bytes a run of the week's partitions takes (heap, indexes and TOAST of runs
    and attempts; with ``detail`` each index too) and returns their total."""
    runs_table, attempts_table = week_tables(week)
    count = await conn.fetchval(f'SELECT count(*) FROM "{runs_table}"')
    latest = await conn.fetchval(
        f'SELECT count(*) FROM "{runs_table}" WHERE attempt_start_time IS NOT NULL'
    )
    earlier = await conn.fetchval(f'SELECT count(*) FROM "{attempts_table}"')
    print(
        f"PostgreSQL, {count:,} runs and {latest + earlier:,} attempts, {earlier:,} of them "
        "before their run's latest (bytes a run):"
    )
    total = 0.0
    for label, table in (("runs", runs_table), ("attempts", attempts_table)):
        parts = await relations(conn, table)
        sums = {k: sum(p.bytes for p in parts if p.kind == k) / count for k in ("heap", "index")}
        toast = sum(p.bytes for p in parts if p.kind == "toast") / count
        total += sums["heap"] + sums["index"] + toast
        print(
            f"  {label:9} heap {sums['heap']:6.1f}  indexes {sums['index']:6.1f}"
            f"  TOAST {toast:4.1f}"
        )
        if detail:
            for p in parts:
                if p.kind == "index":
                    print(f"    {p.name:40} {p.bytes / count:6.1f}")
    print(f"  total     {total:6.1f} B a run")
    return total


async def column_widths(conn: asyncpg.Connection, week: datetime) -> None:
    """Prints each runs and attempts column's average width (after ANALYZE) and NULL share."""
    for table in week_tables(week):
        print(f"{table}: column, average width (B), NULL share")
        for r in await conn.fetch(_WIDTHS, table):
            print(f"  {r['attname']:22} {r['avg_width']:4d}  {r['null_frac']:5.3f}")


async def key_designs(conn: asyncpg.Connection, week: datetime) -> dict[str, float]:
    """Prints and returns the bytes a run each of ``_KEY_DESIGNS`` takes, filled as claims
    fill it."""
    runs_table, _ = week_tables(week)
    count = await conn.fetchval(f'SELECT count(*) FROM "{runs_table}"')
    print("index designs, filled in the order runs are made (bytes a run):")
    sizes = {}
    for label, design in _KEY_DESIGNS.items():
        await conn.execute(f'CREATE TEMP TABLE design (LIKE "{runs_table}")')
        await conn.execute(f"CREATE INDEX design_idx ON design {design}")
        await conn.execute(f'INSERT INTO design SELECT * FROM "{runs_table}" ORDER BY run_id')
        sizes[label] = await conn.fetchval("SELECT pg_relation_size('design_idx')") / count
        print(f"  {label:48} {sizes[label]:6.1f}")
        await conn.execute("DROP TABLE design")
    return sizes


async def seed(dsn: str, jobs: int, runs: int) -> datetime:
    """Seeds ``runs`` finished runs of ``jobs`` jobs in the week three weeks ago; its start."""
    conn = await asyncpg.connect(dsn)
    try:
        started = time.monotonic()
        for t in range(TEAMS):
            await conn.execute("INSERT INTO teams (team_id) VALUES ($1)", f"team-{t:02d}")
        await conn.execute(_JOBS, jobs, TEAMS)
        ids = [r["job_id"] for r in await conn.fetch("SELECT job_id FROM jobs ORDER BY job_id")]
        week: datetime = await conn.fetchval(
            "SELECT date_trunc('week', duetime_now() - interval '21 days')"
        )
        await seed_runs(conn, ids, week, runs, timedelta(days=7) / runs)
        await conn.execute("VACUUM ANALYZE runs, attempts")
        print(f"seeded {runs:,} runs of {jobs:,} jobs in {time.monotonic() - started:.0f} s")
        return week
    finally:
        await conn.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200_000)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--key-designs", action="store_true", help="and other run key designs")
    args = parser.parse_args()
    template = await migrated_template()
    name = f"duetime_bench_{uuid.uuid4().hex[:8]}"
    dsn = await create_database(name, template=template)
    try:
        week = await seed(dsn, args.jobs, args.runs)
        conn = await asyncpg.connect(dsn)
        try:
            await postgres_bytes(conn, week, detail=True)
            await column_widths(conn, week)
            if args.key_designs:
                await key_designs(conn, week)
        finally:
            await conn.close()
    finally:
        await drop_database(name)
        await drop_database(template)


if __name__ == "__main__":
    asyncio.run(main())
