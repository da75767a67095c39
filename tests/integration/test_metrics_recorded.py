"""The facts the scheduler and relay record as metrics, in-process on real PostgreSQL and etcd:
fencing refusals of claims, reaps and requeues; attempt lease expiries; start lateness; records
of claims; partitions lost with their lease; the outbox backlog."""

from __future__ import annotations

import os
import uuid
from datetime import timedelta

import aetcd
import asyncpg
import grpc
import pytest

from duetime.jobs.v1 import job_service_pb2 as svc
from duetime.worker.v1 import worker_service_pb2 as wpb
from duetime_infra.etcd import PartitionLeases
from duetime_infra.pg.attempts.reaper import reap_expired_attempts
from duetime_infra.pg.dispatch.claims import ClaimAbandoned, claim_batch
from duetime_infra.pg.dispatch.dispatcher import requeue_due_retries
from duetime_infra.pg.dispatch.outbox import outbox_backlog
from duetime_infra.pg.fencing import FencingLost, FencingToken, fence
from testkit.api import failure, running_api
from testkit.jobs import create_jobs, interval_job, shift_clock
from testkit.metrics import recorded_metrics
from testkit.polling import eventually
from testkit.worker_api import create_job, exchange, running_worker_api, trigger

pytestmark = pytest.mark.timeout(60)

LOOKAHEAD = timedelta(seconds=5)
REFUSALS = "duetime.fencing.refusals"


async def claim(
    pool: asyncpg.Pool[asyncpg.Record], revision: int, *, still_owner: bool = True
) -> int:
    tokens = {p: FencingToken(p, 0, revision) for p in range(1024)}
    async with pool.acquire() as conn:
        result = await claim_batch(
            conn, tokens, lookahead=LOOKAHEAD, batch_size=100, still_owner=lambda: still_owner
        )
    return result.runs


async def test_claims_count_refusals_and_the_records_they_insert(
    pool: asyncpg.Pool[asyncpg.Record],
) -> None:
    await create_jobs(pool, [interval_job(60) for _ in range(5)])
    async with pool.acquire() as conn, conn.transaction():
        await fence(conn, [FencingToken(p, 0, 11) for p in range(1024)])  # a newer owner
    with recorded_metrics() as metrics:
        # Ten minutes late: the occurrences more than a minute late are MISSED (one record per
        # range), whatever the policy; the latest is on time and queued.
        await shift_clock(pool, timedelta(minutes=10))
        with pytest.raises(FencingLost):
            await claim(pool, revision=10)
        with pytest.raises(ClaimAbandoned):
            await claim(pool, revision=11, still_owner=False)
        assert metrics.value(REFUSALS, operation="claim", check="token") == 1
        assert metrics.value(REFUSALS, operation="claim", check="lease") == 1
        assert metrics.value("duetime.runs.finished") == 0  # rolled back: nothing happened

        assert await claim(pool, revision=11) > 0
        missed = await pool.fetchval("SELECT count(*) FROM runs WHERE state = 'MISSED'")
        queued = await pool.fetchval("SELECT count(*) FROM runs WHERE state = 'QUEUED'")
        assert (missed, queued) == (5, 5)  # each job: one MISSED range, its latest queued
        assert metrics.value("duetime.runs.finished", state="MISSED", reason="MISFIRE") == 5
        assert metrics.value("duetime.runs.finished") == 5
        assert metrics.value(REFUSALS) == 2


async def test_reaper_counts_lease_expiries_and_refusals_of_the_stale(db_dsn: str) -> None:
    async with (
        running_api(db_dsn) as api,
        running_worker_api(db_dsn) as w,
    ):
        job = await create_job(api)
        partition = await w.db.fetchval(
            "SELECT partition FROM jobs WHERE job_id = $1", uuid.UUID(job.job_id)
        )
        tokens = [FencingToken(partition, 0, 1)]
        runs = [await trigger(api, job, f"r{i}") for i in range(2)]
        with recorded_metrics() as metrics:
            assert (await w.start(runs[0], "d-0")).decision == wpb.START_DECISION_STARTED
            assert (await w.start(runs[0], "d-0")).attempt == 1  # a replay: not a new start
            lateness = "duetime.run.start.lateness"
            assert metrics.value(lateness, reference="effective") == 1
            assert metrics.value(lateness, reference="nominal") == 1

            await w.shift_clock(timedelta(minutes=2))  # past the 60 s attempt lease
            assert await reap_expired_attempts(w.pool, tokens, 100) == 1
            expiries = "duetime.attempt.lease.expiries"
            assert metrics.value(expiries, outcome="LEASE_EXPIRED") == 1
            closed = "duetime.attempts.closed"
            assert metrics.value(closed, outcome="LEASE_EXPIRED", closed_by="reaper") == 1
            assert metrics.value("duetime.runs.finished") == 0  # retried, not final

            # The frozen worker wakes up and reports: refused, and counted.
            late = await failure(w.complete(runs[0], 1))
            assert (late.code, late.reason) == (grpc.StatusCode.ABORTED, "STALE_ATTEMPT")
            assert metrics.value(REFUSALS, operation="complete", check="attempt") == 1

            # A newer owner fenced the partition: the old one's reap and requeue roll back.
            await w.start(runs[1], "d-1")
            await w.shift_clock(timedelta(minutes=5))
            async with w.pool.acquire() as conn, conn.transaction():
                await fence(conn, [FencingToken(partition, 0, 7)])
            with pytest.raises(FencingLost):
                await reap_expired_attempts(w.pool, tokens, 100)
            with pytest.raises(FencingLost):
                await requeue_due_retries(w.pool, tokens, timedelta(0), 100)
            assert metrics.value(REFUSALS, operation="reap", check="token") == 1
            assert metrics.value(REFUSALS, operation="requeue", check="token") == 1
            assert metrics.value(expiries) == 1


async def test_heartbeats_for_attempts_the_reaper_closed_are_counted_refusals(
    db_dsn: str,
) -> None:
    async with running_api(db_dsn) as api, running_worker_api(db_dsn) as w:
        job = await create_job(api)
        partition = await w.db.fetchval(
            "SELECT partition FROM jobs WHERE job_id = $1", uuid.UUID(job.job_id)
        )
        reaped, reported, timed_out = [await trigger(api, job, f"r{i}") for i in range(3)]
        for run_id in (reaped, reported, timed_out):
            assert (await w.start(run_id, f"d-{run_id}")).decision == wpb.START_DECISION_STARTED
        with recorded_metrics() as metrics:
            # The worker ends two attempts itself (one as its own TIMED_OUT): beats crossing
            # those reports are not refusals.
            await w.complete(reported, 1)
            await w.complete(timed_out, 1, wpb.ATTEMPT_RESULT_TIMED_OUT)
            # It freezes: the reaper closes the third once its lease has run out.
            await w.shift_clock(timedelta(minutes=2))
            assert await reap_expired_attempts(w.pool, [FencingToken(partition, 0, 1)], 10) == 1
            assert metrics.value(REFUSALS, operation="heartbeat") == 0
            # It wakes up and beats for all three: each is told to stop, one is fenced out.
            stream = w.stub.Heartbeat(metadata=w.auth())
            beat = wpb.HeartbeatRequest(
                worker_id="w-1",
                attempts=[
                    wpb.AttemptRef(run_id=str(r), attempt=1) for r in (reaped, reported, timed_out)
                ],
            )
            response = await exchange(stream, beat)
            await stream.done_writing()
            assert [(d.directive, d.reason) for d in response.directives] == [
                (wpb.DIRECTIVE_CANCEL, "ATTEMPT_CLOSED")
            ] * 3
            assert metrics.value(REFUSALS, operation="heartbeat", check="attempt") == 1


async def test_partitions_owned_and_lost_with_the_lease() -> None:
    endpoint = os.environ["DUETIME_ETCD_ENDPOINT"]
    prefix = f"/duetime-test/{uuid.uuid4()}/"
    leases = PartitionLeases(endpoint, "solo", ttl=3, safety_margin=1, prefix=prefix)
    owned = "duetime.partitions.owned"
    lost = "duetime.partitions.lost"
    with recorded_metrics() as metrics:
        await leases.start()
        try:

            async def owns_all() -> bool:
                return metrics.value(owned, scheduler_id="solo") == 1024

            await eventually(owns_all, 10, "the gauge shows every partition owned")
            host, port = endpoint.rsplit(":", 1)
            async with aetcd.Client(host=host, port=int(port)) as etcd:
                member = await etcd.get(f"{prefix}schedulers/solo".encode())
                assert member is not None
                await etcd.revoke_lease(int(member.lease))

            async def lost_all() -> bool:
                return metrics.value(lost, scheduler_id="solo", cause="lease_lost") == 1024

            await eventually(lost_all, 10, "the lease's loss counted for every partition")
            await eventually(owns_all, 10, "every partition owned again")
        finally:
            await leases.stop()
        assert metrics.value(lost, cause="stopping") == 1024
        assert metrics.value(owned, scheduler_id="solo") == 0


async def test_outbox_backlog_counts_and_ages_rows(pool: asyncpg.Pool[asyncpg.Record]) -> None:
    async with pool.acquire() as conn:
        assert await outbox_backlog(conn) == (0, None)
        await conn.execute(
            "INSERT INTO outbox (topic, message_key, payload, team_id) "
            "SELECT 'duetime.test', '', '', 't' FROM generate_series(1, 30)"
        )
        await shift_clock(pool, timedelta(seconds=90))
        depth, age = await outbox_backlog(conn)
        assert depth == 30
        assert age is not None
        assert timedelta(seconds=90) <= age < timedelta(seconds=120)
        # Above the exact count, the id span stands in for it (an upper bound).
        await conn.execute("DELETE FROM outbox WHERE id % 2 = 0")
        depth, _ = await outbox_backlog(conn, count_up_to=10)
        assert 15 <= depth <= 30


async def test_a_paused_stretch_is_counted_once_when_recorded(db_dsn: str) -> None:
    async with running_api(db_dsn) as api:
        job = (
            await api.stub.CreateJob(
                svc.CreateJobRequest(job=interval_job(60)), metadata=api.auth()
            )
        ).job
        with recorded_metrics() as metrics:
            await api.stub.PauseJob(svc.PauseJobRequest(name=job.name), metadata=api.auth())
            assert metrics.value("duetime.runs.finished") == 0
            db = await asyncpg.connect(db_dsn)
            try:
                await db.execute("""UPDATE duetime_clock SET "offset" = interval '1 hour'""")
            finally:
                await db.close()
            await api.stub.ResumeJob(svc.ResumeJobRequest(name=job.name), metadata=api.auth())
            # One SKIPPED record stands for the hour's occurrences.
            skipped = {"state": "SKIPPED", "reason": "JOB_PAUSED"}
            assert metrics.value("duetime.runs.finished", **skipped) == 1
            assert metrics.value("duetime.runs.finished") == 1
