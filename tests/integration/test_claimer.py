"""The claim loop on real PostgreSQL: the proof it gives its runs, and the look-ahead it sizes
with the steady flow it claims."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import asyncpg
import pytest

from duetime_core.jobspec import PARTITIONS
from duetime_infra.etcd import PartitionLeases
from duetime_scheduler.claimer import Claimer
from duetime_scheduler.config import Settings
from testkit.jobs import create_jobs, interval_job
from testkit.polling import eventually

BASE = timedelta(seconds=5)


@pytest.fixture
async def leases() -> AsyncIterator[PartitionLeases]:
    """One scheduler's partition leases on the stack's etcd, under a prefix of its own: it
    comes to own every partition."""
    own = PartitionLeases(
        os.environ["DUETIME_ETCD_ENDPOINT"],
        "claimer-1",
        prefix=f"/duetime-test/{uuid.uuid4()}/",
    )
    await own.start()
    try:
        await eventually(lambda: len(own.owned()) == PARTITIONS, 20, "every partition owned")
        yield own
    finally:
        await own.stop()


def claimer(
    pool: asyncpg.Pool[asyncpg.Record], dsn: str, leases: PartitionLeases, rate: int = 1000
) -> Claimer:
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
    return Claimer(pool, leases, settings)


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
    pool: asyncpg.Pool[asyncpg.Record], db_dsn: str, leases: PartitionLeases
) -> None:
    # 20 runs a second against a rate of 5: counted on the rate alone, the next ten seconds'
    # runs could not be claimed in time, and the look-ahead would reach the last of them.
    await spread_over_ten_seconds(pool, 20)
    flow = claimer(pool, db_dsn, leases, rate=5)
    claimed, _ = await flow.claim_once()
    assert claimed == 200  # the first count has no flow to go by: it claims all ten seconds
    assert flow.lookahead > BASE
    await size_again(flow)
    # The flow it claimed, about 20 a second, is what it counts on now.
    assert flow.lookahead == BASE


async def test_without_the_flow_claimed_the_same_count_grows_the_look_ahead(
    pool: asyncpg.Pool[asyncpg.Record], db_dsn: str, leases: PartitionLeases
) -> None:
    # The same jobs, counted by a claimer that did not claim them: the rate alone decides.
    await spread_over_ten_seconds(pool, 20)
    first = claimer(pool, db_dsn, leases, rate=5)
    await first.claim_once()
    fresh = claimer(pool, db_dsn, leases, rate=5)
    await fresh.claim_once()
    assert fresh.lookahead > BASE


async def test_the_claimers_runs_refer_to_the_tokens_it_recorded(
    pool: asyncpg.Pool[asyncpg.Record], db_dsn: str, leases: PartitionLeases
) -> None:
    await spread_over_ten_seconds(pool, 2)
    claimed, _ = await claimer(pool, db_dsn, leases).claim_once()  # those due in the look-ahead
    assert claimed > 0
    rows = await pool.fetch(
        "SELECT r.partition, r.claim_token_id, r.claimed_by AS own_by, c.claimed_by, "
        "c.claim_epoch, c.claim_revision FROM runs r JOIN run_claims c USING (run_id, nominal_time)"
    )
    assert len(rows) == claimed
    owned = leases.owned()
    for row in rows:
        assert row["claim_token_id"] is not None
        assert row["own_by"] is None
        token = owned[row["partition"]]
        assert (row["claimed_by"], row["claim_epoch"], row["claim_revision"]) == (
            "claimer-1",
            token.epoch,
            token.revision,
        )


async def test_a_token_a_newer_owner_holds_is_not_recorded(
    pool: asyncpg.Pool[asyncpg.Record], db_dsn: str, leases: PartitionLeases
) -> None:
    await pool.execute("UPDATE partition_tokens SET epoch = 1 WHERE partition = 5")
    await claimer(pool, db_dsn, leases).claim_once()
    recorded = await pool.fetch("SELECT partition, holder FROM claim_tokens")
    assert {r["partition"] for r in recorded} == set(range(PARTITIONS)) - {5}
    assert {r["holder"] for r in recorded} == {"claimer-1"}
