"""The claim-and-advance transaction on real PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from datetime import datetime, timedelta

import asyncpg
import pytest

from duetime.events.v1 import events_pb2
from duetime_core.lookahead import herd_lookahead
from duetime_infra.pg.dispatch.claims import ClaimAbandoned, claim_batch, due_by_second
from duetime_infra.pg.fencing import FencingLost, FencingToken, fence, record_tokens
from duetime_infra.pg.sql import q
from duetime_infra.tracecontext import new_run_trace
from testkit.jobs import create_jobs, cron_job, interval_job, shift_clock

ALL = {p: FencingToken(p, 0, 10) for p in range(1024)}
LOOKAHEAD = timedelta(seconds=5)


async def claim_all(
    pool: asyncpg.Pool[asyncpg.Record],
    tokens: dict[int, FencingToken] = ALL,
    *,
    claimed_by: str = "",
    token_ids: dict[int, int] | None = None,
) -> int:
    total = 0
    async with pool.acquire() as conn:
        while True:
            result = await claim_batch(
                conn,
                tokens,
                lookahead=LOOKAHEAD,
                batch_size=20,
                still_owner=lambda: True,
                claimed_by=claimed_by,
                token_ids=token_ids,
            )
            total += result.runs
            if not result.full:
                return total


async def test_due_jobs_become_runs_with_outbox_rows_and_advance(
    pool: asyncpg.Pool[asyncpg.Record],
) -> None:
    jobs = await create_jobs(pool, [interval_job(60) for _ in range(50)])
    assert await claim_all(pool) == 0  # nothing due yet
    await shift_clock(pool, timedelta(seconds=57))  # within the look-ahead of the first runs
    assert await claim_all(pool) == 50
    assert await claim_all(pool) == 0
    runs = await pool.fetch(
        "SELECT run_id, job_id, nominal_time, state, trace_id, traceparent, trace_context FROM runs"
    )
    assert {r["job_id"] for r in runs} == {j.job_id for j in jobs}
    assert {r["run_id"].version for r in runs} == {7}  # time-ordered: the keys' pages fill
    assert {r["state"] for r in runs} == {"QUEUED"}
    # A run's trace begins at its claim, with the run's own ids: its row keeps the flags
    # alone (schema 31), and its dispatch carries the whole traceparent.
    assert {(r["trace_id"], r["traceparent"]) for r in runs} == {("", "")}
    assert {r["trace_context"] for r in runs} == {b"\x01"}
    traceparents = {r["run_id"]: new_run_trace(r["run_id"]).traceparent for r in runs}
    by_job = {j.job_id: j for j in jobs}
    assert all(r["nominal_time"] == by_job[r["job_id"]].next_run_time for r in runs)
    outbox = await pool.fetch("SELECT payload, headers FROM outbox")
    assert len(outbox) == 50
    dispatched = {events_pb2.RunDispatch.FromString(o["payload"]).job_id for o in outbox}
    assert dispatched == {str(j.job_id) for j in jobs}
    sent = {
        uuid.UUID(events_pb2.RunDispatch.FromString(o["payload"]).run_id): o["headers"]
        for o in outbox
    }
    assert {run_id: h["traceparent"] for run_id, h in sent.items()} == traceparents
    advanced = await pool.fetch("SELECT job_id, next_run_time FROM jobs")
    for a in advanced:
        first = by_job[a["job_id"]].next_run_time
        assert first is not None
        assert a["next_run_time"] == first + timedelta(seconds=60)


async def test_a_claim_counts_its_runs_by_the_second_they_are_due(
    pool: asyncpg.Pool[asyncpg.Record],
) -> None:
    # What the claimer measures the steady flow by (duetime_core.lookahead.SteadyFlow).
    await create_jobs(pool, [interval_job(60) for _ in range(30)])
    await shift_clock(pool, timedelta(seconds=57))
    async with pool.acquire() as conn:
        result = await claim_batch(
            conn, ALL, lookahead=LOOKAHEAD, batch_size=100, still_owner=lambda: True
        )
    rows = await pool.fetch("SELECT effective_time FROM runs")
    assert result.runs == len(rows) == 30
    assert result.due_seconds == Counter(int(r["effective_time"].timestamp()) for r in rows)


async def test_a_stale_owner_commits_nothing(pool: asyncpg.Pool[asyncpg.Record]) -> None:
    await create_jobs(pool, [interval_job(60) for _ in range(10)])
    await shift_clock(pool, timedelta(seconds=60))
    async with pool.acquire() as conn, conn.transaction():
        await fence(conn, [FencingToken(p, 0, 11) for p in range(1024)])  # a newer owner
    with pytest.raises(FencingLost):
        await claim_all(pool)
    with pytest.raises(ClaimAbandoned):
        async with pool.acquire() as conn:
            newer = {p: FencingToken(p, 0, 11) for p in range(1024)}
            await claim_batch(
                conn, newer, lookahead=LOOKAHEAD, batch_size=20, still_owner=lambda: False
            )
    assert await pool.fetchval("SELECT count(*) FROM runs") == 0
    assert await pool.fetchval("SELECT count(*) FROM outbox") == 0


async def test_concurrent_claimers_never_claim_an_occurrence_twice(
    pool: asyncpg.Pool[asyncpg.Record],
) -> None:
    await create_jobs(pool, [interval_job(60) for _ in range(200)])
    await shift_clock(pool, timedelta(seconds=60))
    counts = await asyncio.gather(*(claim_all(pool) for _ in range(4)))
    assert sum(counts) == 200
    assert await pool.fetchval("SELECT count(DISTINCT (job_id, nominal_time)) FROM runs") == 200
    assert await pool.fetchval("SELECT count(*) FROM outbox") == 200


async def test_an_outage_follows_the_misfire_policy(pool: asyncpg.Pool[asyncpg.Record]) -> None:
    await create_jobs(pool, [interval_job(60)])
    await shift_clock(pool, timedelta(hours=1, seconds=30))
    await claim_all(pool)
    runs = await pool.fetch(
        "SELECT state, reason, occurrence_count FROM runs ORDER BY nominal_time"
    )
    assert [(r["state"], r["reason"], r["occurrence_count"]) for r in runs] == [
        ("MISSED", "MISFIRE", 59),
        ("QUEUED", "", 1),
    ]
    assert await pool.fetchval("SELECT count(*) FROM outbox") == 1


async def test_an_unplannable_job_goes_to_error_without_failing_the_batch(
    pool: asyncpg.Pool[asyncpg.Record],
) -> None:
    healthy = await create_jobs(pool, [interval_job(60) for _ in range(20)])
    lost_zone, unreadable = await create_jobs(
        pool, [cron_job("30 2 * * *", "America/New_York") for _ in range(2)]
    )
    due_now = "next_run_time = duetime_now(), next_effective_time = duetime_now()"
    # A zone this build's tzdata no longer has (as after a tzdata release drops one): the
    # pending occurrence, computed when the zone existed, is claimed; nothing after it can be.
    await pool.execute(
        f"""UPDATE jobs SET {due_now},
               spec = jsonb_set(jsonb_set(spec, '{{schedule,time_zone}}', '"Mars/Olympus"'),
                                '{{schedule,gap}}', '"SKIP"')
           WHERE job_id = $1""",
        lost_zone.job_id,
    )
    # A stored document this build cannot read at all.
    await pool.execute(
        f"UPDATE jobs SET {due_now}, spec = spec - 'schedule' WHERE job_id = $1",
        unreadable.job_id,
    )
    await shift_clock(pool, timedelta(seconds=60))
    assert await claim_all(pool) == len(healthy) + 1
    rows = await pool.fetch(
        "SELECT j.job_id, j.state, j.state_reason, count(r.run_id) AS runs FROM jobs j "
        "LEFT JOIN runs r ON r.job_id = j.job_id WHERE j.job_id = ANY($1) GROUP BY j.job_id",
        [lost_zone.job_id, unreadable.job_id],
    )
    by_id = {r["job_id"]: r for r in rows}
    assert by_id[lost_zone.job_id]["state"] == "ERROR"
    assert "Mars/Olympus" in by_id[lost_zone.job_id]["state_reason"]
    assert by_id[lost_zone.job_id]["runs"] == 1
    assert by_id[unreadable.job_id]["state"] == "ERROR"
    assert by_id[unreadable.job_id]["runs"] == 0


async def test_a_job_due_now_is_claimed_before_a_herd_only_a_grown_look_ahead_reaches(
    pool: asyncpg.Pool[asyncpg.Record],
) -> None:
    # The herd's rows first (stored before it, wherever the scan starts), then a job due sooner.
    await create_jobs(pool, [interval_job(120) for _ in range(100)])
    await shift_clock(pool, timedelta(seconds=57))  # the herd is due in about 63 s
    [due] = await create_jobs(pool, [interval_job(3)])  # due in about 3 s
    async with pool.acquire() as conn:
        result = await claim_batch(
            conn,
            ALL,
            lookahead=LOOKAHEAD,
            batch_size=10,
            still_owner=lambda: True,
            ahead=timedelta(seconds=70),
        )
    assert result.full
    # Whatever partition it is in, the job due within the base look-ahead is in the first
    # batch; the herd's rows only fill the room it left.
    claimed = {r["job_id"] for r in await pool.fetch("SELECT job_id FROM runs")}
    assert len(claimed) == 10
    assert due.job_id in claimed


async def test_a_herd_grows_the_look_ahead_as_far_as_its_size_needs(
    pool: asyncpg.Pool[asyncpg.Record],
) -> None:
    jobs = await create_jobs(pool, [interval_job(60) for _ in range(300)])
    await shift_clock(pool, timedelta(seconds=25))  # the herd is due in about 35 s
    partitions = sorted(ALL)

    async def reach(rate: int) -> timedelta:
        async with pool.acquire() as conn:
            _now, counts = await due_by_second(conn, partitions, timedelta(seconds=60))
        assert sum(n for _, n in counts) == 300
        return herd_lookahead(counts, base=LOOKAHEAD, horizon=timedelta(seconds=60), rate=rate)

    # 300 jobs at 100 a second need 3 s: the base look-ahead will do, nothing is claimed yet.
    assert await reach(100) == LOOKAHEAD
    # At 10 a second they need 30 s: claimed now, 35 s ahead, one run each.
    ahead = await reach(10)
    assert timedelta(seconds=34) <= ahead <= timedelta(seconds=36)
    async with pool.acquire() as conn:
        claimed = 0
        while True:
            result = await claim_batch(
                conn,
                ALL,
                lookahead=LOOKAHEAD,
                batch_size=100,
                still_owner=lambda: True,
                ahead=ahead,
            )
            claimed += result.runs
            if not result.full:
                break
    assert claimed == 300
    assert await pool.fetchval("SELECT count(DISTINCT job_id) FROM runs") == 300
    advanced = {r["job_id"]: r["next_run_time"] for r in await pool.fetch("SELECT * FROM jobs")}
    for job in jobs:
        assert job.next_run_time is not None
        assert advanced[job.job_id] == job.next_run_time + timedelta(seconds=60)


async def test_a_claim_does_not_skip_a_job_whose_run_is_starting(
    pool: asyncpg.Pool[asyncpg.Record],
) -> None:
    (job,) = await create_jobs(pool, [interval_job(60)])
    await shift_clock(pool, timedelta(seconds=57))
    async with pool.acquire() as conn, conn.transaction():
        # The job's lock as a start or report of one of its runs holds it.
        await conn.fetchrow(q("attempt_job_lock"), job.job_id)
        assert await asyncio.wait_for(claim_all(pool), 10) == 1


async def test_a_run_claimed_under_a_recorded_token_keeps_only_its_id(
    pool: asyncpg.Pool[asyncpg.Record],
) -> None:
    await create_jobs(pool, [interval_job(60) for _ in range(20)])
    await shift_clock(pool, timedelta(seconds=57))
    async with pool.acquire() as conn, conn.transaction():
        ids = await record_tokens(conn, [t for p, t in ALL.items() if p % 2 == 0], "sched-a")
    assert len(ids) == 512
    assert await claim_all(pool, claimed_by="sched-a", token_ids=ids) == 20
    rows = await pool.fetch(
        "SELECT r.partition, r.claim_token_id, r.claimed_by AS own_by, r.claim_epoch AS own_epoch,"
        " r.claim_revision AS own_revision, c.claimed_by, c.claim_epoch, c.claim_revision "
        "FROM runs r JOIN run_claims c USING (run_id, nominal_time)"
    )
    assert {r["partition"] % 2 for r in rows} == {0, 1}
    for row in rows:
        if row["partition"] in ids:
            # Schema 30: the proof is the token's id; the run's own columns hold nothing.
            assert row["claim_token_id"] == ids[row["partition"]]
            assert (row["own_by"], row["own_epoch"], row["own_revision"]) == (None, None, None)
        else:
            # A token the claimer did not record: the run keeps the proof itself.
            assert row["claim_token_id"] is None
            assert (row["own_by"], row["own_epoch"], row["own_revision"]) == ("sched-a", 0, 10)
        assert (row["claimed_by"], row["claim_epoch"], row["claim_revision"]) == ("sched-a", 0, 10)


async def test_a_run_due_over_an_hour_after_its_claim_keeps_its_own_proof(
    pool: asyncpg.Pool[asyncpg.Record],
) -> None:
    # A DST gap's record may name an instant a schedule's period ahead: a token may be pruned
    # before such a run's week is (duetime_prune_claim_tokens), so it keeps the old form.
    (job,) = await create_jobs(pool, [interval_job(60)])
    async with pool.acquire() as conn, conn.transaction():
        ids = await record_tokens(conn, [ALL[3]], "sched-a")
    now = await pool.fetchval("SELECT duetime_now()")
    soon, later = now + timedelta(minutes=50), now + timedelta(minutes=70)
    runs = [(uuid.uuid4(), soon), (uuid.uuid4(), later)]
    count = len(runs)
    await pool.execute(
        q("claim_insert_runs"),
        [r for r, _ in runs],
        [job.job_id] * count,
        ["team-a"] * count,
        [3] * count,
        [at for _, at in runs],
        [at for _, at in runs],
        ["SKIPPED"] * count,
        ["DST_GAP"] * count,
        [3] * count,
        [None] * count,
        [1] * count,
        [""] * count,
        [1] * count,
        ["NORMAL"] * count,
        "sched-a",
        [0] * count,
        [10] * count,
        [""] * count,
        [""] * count,
        [None] * count,
        [ids[3]] * count,
    )
    stored = {
        r["nominal_time"]: (r["claim_token_id"], r["claimed_by"], r["claim_revision"])
        for r in await pool.fetch("SELECT * FROM runs")
    }
    assert stored == {soon: (ids[3], None, None), later: (None, "sched-a", 10)}


async def raised(
    pool: asyncpg.Pool[asyncpg.Record], tokens: list[tuple[int, int, datetime | None]]
) -> None:
    """Tokens of epoch 0 as (partition, revision, raised at: now if None), in that order."""
    await pool.executemany(
        "INSERT INTO claim_tokens (partition, epoch, revision, holder, raise_time) "
        "VALUES ($1, 0, $2, 'sched-a', coalesce($3, duetime_now()))",
        tokens,
    )


async def test_a_token_is_pruned_only_once_no_kept_run_can_have_been_claimed_under_it(
    pool: asyncpg.Pool[asyncpg.Record],
) -> None:
    await pool.execute("SELECT duetime_maintain_partitions()")
    oldest_week = await pool.fetchval(
        "SELECT min(substring(pg_get_expr(c.relpartbound, c.oid) FROM 'FROM \\(''([^'']+)''\\)')"
        "::timestamptz) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = 'runs'::regclass AND c.relname <> 'runs_default'"
    )
    long_before = oldest_week - timedelta(days=3)
    tokens = [
        # Partition 1: replaced long before the oldest kept week, then again just now.
        (1, 1, long_before), (1, 2, long_before), (1, 3, None),
        # Partition 2: replaced half a day before the oldest week began: its runs could be
        # within the day's margin.
        (2, 1, long_before), (2, 2, oldest_week - timedelta(hours=12)),
        # Partition 3: recorded out of order (a stale owner's record after its successor's):
        # the token with the lower revision is the older, whatever its id.
        (3, 7, long_before), (3, 6, long_before - timedelta(days=1)),
    ]  # fmt: skip
    await raised(pool, tokens)
    assert await pool.fetchval("SELECT duetime_prune_claim_tokens()") == 2
    kept = {(r["partition"], r["revision"]) for r in await pool.fetch("SELECT * FROM claim_tokens")}
    assert kept == {(1, 2), (1, 3), (2, 1), (2, 2), (3, 7)}
    # A run in the default partition made long before keeps every token since then.
    await pool.execute("DELETE FROM claim_tokens")
    await raised(pool, tokens)
    (job,) = await create_jobs(pool, [interval_job(60)])
    await pool.execute(
        "INSERT INTO runs (run_id, job_id, team_id, partition, nominal_time, effective_time, "
        "origin, state, attempt_limit, job_version, create_time) "
        "VALUES (gen_random_uuid(), $1, 'team-a', 1, $2, $2, 'SCHEDULE', 'QUEUED', 3, 1, $3)",
        job.job_id,
        long_before - timedelta(days=30),
        long_before - timedelta(days=1),
    )
    assert await pool.fetchval("SELECT duetime_prune_claim_tokens()") == 0
