"""Load proofs with the four services as processes, two workers and a real HTTP target:

- a thousand runs of a few hundred interval jobs: every occurrence accounted for once,
  every run SUCCEEDED, never two attempts of a run open at once, and the target's own log agrees
  with the attempts table;
- the same with the Kafka broker (a private one) stopped for several seconds and started again
  under load: no run lost, none succeeded twice.

Jobs are paused at the end, so the schedule is bounded and the check can wait for every run to
settle.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import asyncpg
import pytest

from duetime.jobs.v1 import job_service_pb2
from duetime_infra.kafka.topics import DEAD_LETTER_TOPIC, DISPATCH_TOPICS
from testkit.fleet import assert_every_occurrence_accounted_once
from testkit.http_target import HttpTarget, http_target
from testkit.invariants import (
    UNSETTLED,
    TargetCall,
    assert_none,
    attempt_violations,
    call_violations,
    read_records,
)
from testkit.kafka import PrivateKafka, create_topics
from testkit.polling import eventually
from testkit.system import Api, System, http_job, running_system

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with http_target() as server:
        yield server


async def create_interval_jobs(api: Api, url: str, count: int, every: timedelta) -> list[str]:
    jobs = await asyncio.gather(
        *(api.create(http_job(f"load-{i}", url, every=every)) for i in range(count))
    )
    return [job.name for job in jobs]


async def pause_all(api: Api, names: list[str]) -> None:
    await asyncio.gather(
        *(
            api.stub.PauseJob(job_service_pb2.PauseJobRequest(name=n), metadata=api.metadata)
            for n in names
        )
    )


async def settle(pool: asyncpg.Pool[asyncpg.Record], within: float) -> None:
    async def settled() -> bool:
        left = await pool.fetchval(
            "SELECT count(*) FROM runs WHERE state = ANY($1::text[])", list(UNSETTLED)
        )
        return int(left) == 0

    took = await eventually(settled, within, "every run settled", interval=0.5)
    print(f"settled {took:.1f} s after the jobs were paused")


async def check_runs_and_calls(pool: asyncpg.Pool[asyncpg.Record], target: HttpTarget) -> int:
    """Every run SUCCEEDED; its attempts never overlap; the target was called once per attempt
    (a handed-back one perhaps not at all), with the attempt's number, inside that attempt's
    lifetime. Returns the number of runs."""
    async with pool.acquire() as conn:
        checked = await assert_every_occurrence_accounted_once(conn)
        records = (await read_records(conn)).every_paused_apart()
    assert records.runs, "no run happened"
    not_succeeded = [dict(r) for r in records.runs if r["state"] != "SUCCEEDED"]
    assert not not_succeeded, not_succeeded[:5]
    assert len(records.runs) <= checked
    calls = [
        TargetCall(c.headers["Idempotency-Key"], int(c.headers["Duetime-Attempt"]), c.time)
        for c in target.calls
    ]
    assert_none(attempt_violations(records) + call_violations(records, calls))
    return len(records.runs)


async def print_logs_of_repeated_calls(
    system: System, target: HttpTarget, pool: asyncpg.Pool[asyncpg.Record]
) -> None:
    """What the services logged about runs whose target was called more than once."""
    counts: dict[str, int] = defaultdict(int)
    for call in target.calls:
        counts[call.headers["Idempotency-Key"]] += 1
    for key in [k for k, n in counts.items() if n > 1][:3]:
        print(f"--- {key}: {[c.time for c in target.calls if c.headers['Idempotency-Key'] == key]}")
        job_id = key.split("/")[0]
        run_ids = [
            str(r["run_id"])
            for r in await pool.fetch("SELECT run_id FROM runs WHERE job_id::text = $1", job_id)
        ]
        services = {"scheduler": system.scheduler, **system.workers}
        for name, service in services.items():
            for line in service.output:
                if any(r in line for r in run_ids):
                    print(name, line)


async def runs_made(pool: asyncpg.Pool[asyncpg.Record]) -> int:
    return int(await pool.fetchval("SELECT count(*) FROM runs"))


async def test_a_thousand_runs_each_succeed_once_and_the_target_agrees(
    db_dsn: str, target: HttpTarget
) -> None:
    began = time.monotonic()
    pool = await asyncpg.create_pool(db_dsn, min_size=1, max_size=2)
    try:
        # A short look-ahead: the runs claimed ahead of the pause are SKIPPED (JOB_PAUSED).
        async with running_system(
            db_dsn, workers=2, scheduler_extra={"DUETIME_CLAIM_LOOKAHEAD": "1"}
        ) as system:
            names = await create_interval_jobs(
                system.api, target.url("/load"), 250, timedelta(seconds=2)
            )

            # About four runs of each of the 250 jobs: each job's series of runs is checked
            # the same way however long it is; more runs only take longer.
            async def enough_runs() -> bool:
                return await runs_made(pool) >= 1000

            took = await eventually(enough_runs, 60, "1,000 runs claimed", interval=0.5)
            print(f"1,000 runs claimed in {took:.1f} s")
            await pause_all(system.api, names)
            await settle(pool, 90)
            try:
                runs = await check_runs_and_calls(pool, target)
            except AssertionError:
                await print_logs_of_repeated_calls(system, target, pool)
                raise
            by_worker = await pool.fetch(
                "SELECT worker_id, count(*) AS n FROM run_attempts GROUP BY worker_id ORDER BY 1"
            )
            print(f"{runs} runs; attempts by worker: {[tuple(r) for r in by_worker]}")
            # Most of the 1,000 ran; those still queued at the pause were SKIPPED (more of
            # them on a busy machine, so this is a floor, not a throughput figure).
            assert runs >= 400
            assert [r["worker_id"] for r in by_worker] == ["w1", "w2"]
    finally:
        await pool.close()
    print(f"took {time.monotonic() - began:.1f} s")


async def test_kafka_restarted_under_load_loses_no_run_and_doubles_no_success(
    db_dsn: str, target: HttpTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    began = time.monotonic()
    kafka = PrivateKafka(tmp_path / "kafka")
    pool = await asyncpg.create_pool(db_dsn, min_size=1, max_size=2)
    try:
        await kafka.format()
        await kafka.start()
        await create_topics(kafka.bootstrap, sorted(DISPATCH_TOPICS.values()), partitions=6)
        await create_topics(kafka.bootstrap, [DEAD_LETTER_TOPIC], partitions=1)
        # The services (and the harness's consumer-group setup) take the broker from here.
        monkeypatch.setenv("DUETIME_KAFKA_BOOTSTRAP", kafka.bootstrap)
        async with running_system(
            db_dsn, workers=2, relay_extra={"DUETIME_RELAY_PRODUCE_TIMEOUT": "3"}
        ) as system:
            names = await create_interval_jobs(
                system.api, target.url("/restart"), 100, timedelta(seconds=1)
            )

            async def calls_at_least(n: int) -> bool:
                return len(target.calls) >= n

            await eventually(lambda: calls_at_least(300), 40, "300 calls before the outage")
            await kafka.stop()
            down_at = time.monotonic()
            calls_before = len(target.calls)
            claimed_before = await runs_made(pool)

            async def claimed_while_down() -> bool:
                return await runs_made(pool) >= claimed_before + 600

            # The scheduler keeps claiming (into the outbox) while the broker is away.
            await eventually(claimed_while_down, 30, "600 runs claimed with Kafka down")
            print(
                f"broker down {time.monotonic() - down_at:.1f} s; "
                f"{len(target.calls) - calls_before} calls meanwhile (already consumed)"
            )
            outage_runs = [r["run_id"] for r in await pool.fetch("SELECT run_id FROM runs")]
            await kafka.start()
            print(f"broker back after {time.monotonic() - down_at:.1f} s")

            async def outage_runs_succeeded() -> bool:
                done = await pool.fetchval(
                    "SELECT count(*) FROM runs WHERE run_id = ANY($1) AND state = 'SUCCEEDED'",
                    outage_runs,
                )
                return int(done) == len(outage_runs)

            # Pausing skips runs not yet called, so it waits for those claimed during the outage.
            await eventually(outage_runs_succeeded, 90, "the outage's runs succeeded")
            await pause_all(system.api, names)
            await settle(pool, 120)
            runs = await check_runs_and_calls(pool, target)
            print(f"{runs} runs, all SUCCEEDED once")
            assert runs >= len(outage_runs)
    except BaseException:
        print("private kafka log:", kafka.tail(), sep="\n")
        raise
    finally:
        await pool.close()
        await kafka.stop()
        print(f"took {time.monotonic() - began:.1f} s")
