"""A beat's lookups of the attempts it names, in the generic plan it runs: with each run's
nominal time said, only the weekly partitions holding those runs are read (PostgreSQL's
pruning at run time); without it, every partition's index is probed. EXPLAIN ANALYZE of the
statement, PREPAREd under force_generic_plan."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

import pytest

from duetime_infra.pg.sql import q
from testkit.environments import ApiAndWorkers
from testkit.worker_api import WorkerClient, create_job

WEEK = timedelta(days=7)
STARTED = 1


def _array(values: Sequence[object]) -> str:
    return "'{" + ",".join("NULL" if v is None else f'"{v}"' for v in values) + "}'"


def _scans(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if node.get("Node Type", "").endswith("Scan") and "Relation Name" in node:
        yield node
    for child in node.get("Plans", []):
        yield from _scans(child)


async def _read_partitions(w: WorkerClient, name: str, *literals: str) -> set[str]:
    """The partitions of runs and attempts the statement's generic plan read (scans executed)."""
    async with w.pool.acquire() as conn:
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        await conn.execute(f"PREPARE probe AS {q(name)}")
        try:
            transaction = conn.transaction()
            await transaction.start()
            # The pool's codec reads json: the plan arrives decoded.
            plan: list[dict[str, Any]] = await conn.fetchval(
                "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, FORMAT JSON) "
                f"EXECUTE probe({', '.join(literals)})"
            )
            await transaction.rollback()
        finally:
            await conn.execute("DEALLOCATE probe")
            await conn.execute("RESET plan_cache_mode")
    return {
        scan["Relation Name"]
        for scan in _scans(plan[0]["Plan"])
        if scan["Relation Name"].startswith(("runs_", "attempts_")) and scan["Actual Loops"] > 0
    }


async def _running(env: ApiAndWorkers) -> list[tuple[uuid.UUID, datetime, str]]:
    """Two runs started by w-1, a week apart, each with its nominal time and its week."""
    w = env.w
    job = await create_job(env.api)
    now = await w.now()
    running = []
    for i, nominal in enumerate((now - WEEK - timedelta(hours=1), now - timedelta(hours=1))):
        run_id = await w.queue_scheduled_run(job.job_id, nominal)
        assert (await w.start(run_id, f"d-{i}")).decision == STARTED
        week: str = await w.db.fetchval(
            "SELECT tableoid::regclass::text FROM runs WHERE run_id = $1", run_id
        )
        running.append((run_id, nominal, week.removeprefix("runs_")))
    assert len({week for _, _, week in running}) == 2
    assert "default" not in {week for _, _, week in running}
    return running


@pytest.mark.parametrize("said", [True, False])
async def test_a_beat_reads_only_the_partitions_of_the_attempts_it_names(
    env: ApiAndWorkers, said: bool
) -> None:
    running = await _running(env)
    times = [t.isoformat() if said else None for _, t, _ in running]
    read = await _read_partitions(
        env.w,
        "attempt_heartbeat",
        _array([r for r, _, _ in running]),
        _array([1] * len(running)),
        "'w-1'",
        "'60 seconds'",
        _array([None] * len(running)),
        "''",
        _array(times),
    )
    # The open attempts are in their runs' rows: the attempts table is not read.
    weeks = {f"runs_{week}" for _, _, week in running}
    if said:
        assert read == weeks
    else:
        assert read > weeks  # the attempts looked for in every partition
