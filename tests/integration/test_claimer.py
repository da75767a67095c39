"""The claim loop on real PostgreSQL: the proof it gives its runs, and the look-ahead it sizes
with the steady flow it claims."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from typing import cast

import asyncpg

from duetime_infra.etcd import PartitionLeases, PartitionToken
from duetime_scheduler.claimer import Claimer
from duetime_scheduler.config import Settings
from testkit.jobs import create_jobs, interval_job

BASE = timedelta(seconds=5)


class OwnsEverything:
    """The two calls the claimer makes of its partition leases: every partition, always."""

    def owned(self) -> dict[int, PartitionToken]:
        return {p: PartitionToken(p, 0, 10) for p in range(1024)}

    def claim_deadline(self) -> float:
        return time.monotonic() + 60


def claimer(pool: asyncpg.Pool[asyncpg.Record], dsn: str, rate: int = 1000) -> Claimer:
    settings = Settings.from_env(
        {
            **os.environ,  # the test keyring
            "DUETIME_PLAINTEXT": "all",
            "DUETIME_SCHEDULER_ID": "claimer-1",
            "DUETIME_PG_DSN": dsn,
            "DUETIME_CLAIM_LOOKAHEAD": str(BASE.total_seconds()),
            "DUETIME_CLAIM_HORIZON": "60",
            "DUETIME_CLAIM_RATE": str(rate),
        }
    )
    return Claimer(pool, cast(PartitionLeases, OwnsEverything()), settings)


async def spread_over_ten_seconds(pool: asyncpg.Pool[asyncpg.Record], per_second: int) -> None:
    """Jobs every 10 s, anchored so that ``per_second`` of them fall due in each of ten
    seconds from about 2 s on."""
    now = await pool.fetchval("SELECT date_trunc('second', duetime_now())")
    jobs = []
    for i in range(10 * per_second):
        job = interval_job(10)
        job.schedule.interval.start_time.FromDatetime(now + timedelta(seconds=i % 10 + 2.5))
        jobs.append(job)
    await create_jobs(pool, jobs)


async def size_again(claimer: Claimer) -> None:
    """One more pass that counts what is due again, as the next second's pass would."""
    claimer._sized_at = -1.0e9
    await claimer.claim_once()


async def test_a_steady_flow_above_the_claim_rate_keeps_the_base_look_ahead(
    pool: asyncpg.Pool[asyncpg.Record], db_dsn: str
) -> None:
    # 20 runs a second against a rate of 5: counted on the rate alone, the next ten seconds'
    # runs could not be claimed in time, and the look-ahead would reach the last of them.
    await spread_over_ten_seconds(pool, 20)
    flow = claimer(pool, db_dsn, rate=5)
    claimed, _ = await flow.claim_once()
    assert claimed == 200  # the first count has no flow to go by: it claims all ten seconds
    assert flow.lookahead > BASE
    await size_again(flow)
    # The flow it claimed, about 20 a second, is what it counts on now.
    assert flow.lookahead == BASE


async def test_without_the_flow_claimed_the_same_count_grows_the_look_ahead(
    pool: asyncpg.Pool[asyncpg.Record], db_dsn: str
) -> None:
    # The same jobs, counted by a claimer that did not claim them: the rate alone decides.
    await spread_over_ten_seconds(pool, 20)
    first = claimer(pool, db_dsn, rate=5)
    await first.claim_once()
    fresh = claimer(pool, db_dsn, rate=5)
    await fresh.claim_once()
    assert fresh.lookahead > BASE


async def test_the_claimers_runs_refer_to_the_tokens_it_recorded(
    pool: asyncpg.Pool[asyncpg.Record], db_dsn: str
) -> None:
    await spread_over_ten_seconds(pool, 2)
    claimed, _ = await claimer(pool, db_dsn).claim_once()  # those due within the look-ahead
    assert claimed > 0
    rows = await pool.fetch(
        "SELECT r.claim_token_id, r.claimed_by AS own_by, c.claimed_by, c.claim_revision "
        "FROM runs r JOIN run_claims c USING (run_id, nominal_time)"
    )
    assert len(rows) == claimed
    assert all(r["claim_token_id"] is not None and r["own_by"] is None for r in rows)
    assert {(r["claimed_by"], r["claim_revision"]) for r in rows} == {("claimer-1", 10)}


async def test_a_token_a_newer_owner_holds_is_not_recorded(
    pool: asyncpg.Pool[asyncpg.Record], db_dsn: str
) -> None:
    await pool.execute("UPDATE partition_tokens SET revision = 99 WHERE partition = 5")
    await claimer(pool, db_dsn).claim_once()
    recorded = await pool.fetch("SELECT partition, holder FROM claim_tokens")
    assert {r["partition"] for r in recorded} == set(range(1024)) - {5}
    assert {r["holder"] for r in recorded} == {"claimer-1"}
