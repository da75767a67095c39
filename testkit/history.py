"""Run history made with SQL (generate_series), as much as a bench needs: runs of given jobs
in a stretch of time, finished (succeeded, dead-lettered, missed, some triggered), each
started one with its attempts (the latest in its row)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from duetime_infra.pg.pool import Conn, create_pool
from testkit.jobs import create_jobs, interval_job

RUNS_A_WEEK = 600
HOT_RUNS = 60

_RUNS = """
WITH j AS (SELECT job_id, team_id, partition, (row_number() OVER (ORDER BY job_id) - 1) AS n
           FROM jobs WHERE job_id = ANY($1::uuid[])),
     s AS (SELECT i, $2::timestamptz + make_interval(secs => i::float8 * $3) AS nominal,
                  CASE WHEN i % 200 = 7 THEN 'DEAD_LETTERED' WHEN i % 100 = 3 THEN 'MISSED'
                       ELSE 'SUCCEEDED' END AS state
           FROM generate_series(0, $4 - 1) AS i),
     -- The token the scheduled runs were claimed under (schema 30).
     tok AS (INSERT INTO claim_tokens (partition, epoch, revision, holder)
             VALUES (0, 1, 42, 'scheduler-1')
             ON CONFLICT (partition, epoch, revision) DO UPDATE SET holder = excluded.holder
             RETURNING token_id)
INSERT INTO runs (run_id, job_id, team_id, partition, nominal_time, effective_time, origin,
                  state, reason, reason_detail, attempt, attempt_limit, first_start_time,
                  trace_context, job_version, claim_token_id, claimed_by, claim_epoch,
                  claim_revision, create_time, update_time, attempt_worker_id, attempt_start_time,
                  attempt_lease_expire_time, attempt_deadline, attempt_end_time,
                  attempt_outcome, attempt_error, attempt_cancel_reason,
                  attempt_call_progress, attempt_early)
SELECT t.run_id, j.job_id, j.team_id, j.partition, s.nominal, s.nominal,
       CASE WHEN s.i % 50 = 0 THEN 'TRIGGER:seed-' || s.i ELSE 'SCHEDULE' END,
       s.state,
       CASE s.state WHEN 'DEAD_LETTERED' THEN 'ATTEMPTS_EXHAUSTED' WHEN 'MISSED' THEN 'MISFIRE'
                    ELSE '' END,
       CASE s.state WHEN 'DEAD_LETTERED' THEN 'HTTP 503 three times' ELSE '' END,
       n.attempt, 3, n.first_start,
       -- Its trace context (tracecontext.stored_trace): the flags alone, its ids its own
       -- (schema 31); one run in 50 made before, its traceparent's 25 bytes (schema 28).
       CASE WHEN t.trace_id = '' THEN NULL
            WHEN s.i % 50 = 25 THEN decode(t.trace_id || t.span || '01', 'hex')
            ELSE decode('01', 'hex') END, 1,
       -- The claim's proof: a trigger's none, one run in 50 as claimed before schema 30.
       CASE WHEN s.i % 50 NOT IN (0, 25) THEN (SELECT token_id FROM tok) END,
       CASE s.i % 50 WHEN 0 THEN '' WHEN 25 THEN 'scheduler-0' END,
       CASE s.i % 50 WHEN 0 THEN 0 WHEN 25 THEN 1 END,
       CASE s.i % 50 WHEN 0 THEN 0 WHEN 25 THEN 41 END,
       s.nominal - interval '10 seconds',
       s.nominal + interval '130 milliseconds',
       -- The latest attempt, in the run's row (schema 27), as _ATTEMPTS makes the others.
       CASE WHEN n.attempt > 0 THEN 'worker-' || (n.attempt % 4) END, l.start,
       l.start + interval '1 minute', l.start + interval '5 minutes',
       l.start + interval '90 milliseconds',
       CASE WHEN n.attempt > 0 THEN
           CASE s.state WHEN 'SUCCEEDED' THEN 'SUCCEEDED' ELSE 'FAILED' END END,
       CASE WHEN n.attempt > 0 THEN
           CASE s.state WHEN 'SUCCEEDED' THEN '' ELSE 'HTTP 503' END END,
       CASE WHEN n.attempt > 0 THEN '' END,
       CASE WHEN n.attempt > 0 THEN 'ANSWERED' END,
       CASE WHEN n.attempt > 0 THEN false END
FROM s JOIN j ON j.n = s.i % cardinality($1::uuid[])
CROSS JOIN LATERAL (
    SELECT CASE s.state WHEN 'SUCCEEDED' THEN 1 WHEN 'DEAD_LETTERED' THEN 3 ELSE 0 END AS attempt,
           CASE WHEN s.state <> 'MISSED' THEN s.nominal + interval '40 milliseconds' END
               AS first_start
) n
CROSS JOIN LATERAL (
    SELECT n.first_start + (n.attempt - 1) * interval '5 seconds' AS start
) l
CROSS JOIN LATERAL (
    -- A UUIDv7 made when the run was (duetime_core.runkey.new_run_id); a run's trace begins
    -- when it is queued (a missed one has none), as the claims' do.
    SELECT (lpad(to_hex(floor(extract(epoch FROM s.nominal) * 1000)::bigint - 10000), 12, '0')
            || '7' || substr(r.h, 1, 3) || '8' || substr(r.h, 4, 15))::uuid AS run_id,
           CASE WHEN s.state <> 'MISSED' THEN replace(gen_random_uuid()::text, '-', '')
                ELSE '' END AS trace_id,
           substr(r.h, 19, 14) || '01' AS span
    FROM (SELECT md5(s.i::text || random()::text) AS h) r
) t
"""

# The attempts before each run's latest (a dead-lettered run's first two).
_ATTEMPTS = """
INSERT INTO attempts (run_id, nominal_time, number, partition, worker_id, delivery_id,
                      start_time, lease_expire_time, deadline, end_time, outcome, error,
                      call_progress)
SELECT r.run_id, r.nominal_time, k, r.partition, 'worker-' || (k % 4), '',
       r.first_start_time + (k - 1) * interval '5 seconds',
       r.first_start_time + (k - 1) * interval '5 seconds' + interval '1 minute',
       r.first_start_time + (k - 1) * interval '5 seconds' + interval '5 minutes',
       r.first_start_time + (k - 1) * interval '5 seconds' + interval '90 milliseconds',
       'FAILED', 'HTTP 503', 'ANSWERED'
FROM runs r CROSS JOIN LATERAL generate_series(1, r.attempt - 1) AS k
WHERE r.job_id = ANY($1::uuid[]) AND r.nominal_time >= $2 AND r.nominal_time < $3
ORDER BY r.nominal_time, k  -- in the order they start, as workers start them
"""


async def seed_runs(
    conn: Conn, jobs: list[uuid.UUID], start: datetime, count: int, step: timedelta
) -> None:
    """``count`` finished runs of ``jobs`` (in turn), one every ``step`` from ``start``, and
    their attempts."""
    await conn.execute(_RUNS, jobs, start, step.total_seconds(), count)
    await conn.execute(_ATTEMPTS, jobs, start, start + step * count)


async def seed_history(dsn: str, jobs: int = 3) -> tuple[list[uuid.UUID], datetime]:
    """Finished runs of ``jobs`` new jobs of team-a (which must exist): ``RUNS_A_WEEK`` in the
    week that began three weeks ago (past a 7-day hot retention), one every 15 minutes from an
    hour into it, and ``HOT_RUNS`` in the last day; returns the jobs and the old week."""
    pool = await create_pool(dsn, max_size=2)
    try:
        made = await create_jobs(pool, [interval_job(60) for _ in range(jobs)])
        ids = [j.job_id for j in made]
        async with pool.acquire() as conn:
            week = await conn.fetchval(
                "SELECT date_trunc('week', duetime_now() - interval '21 days')"
            )
            await seed_runs(
                conn, ids, week + timedelta(hours=1), RUNS_A_WEEK, timedelta(minutes=15)
            )
            recent = await conn.fetchval("SELECT duetime_now() - interval '1 day'")
            await seed_runs(conn, ids, recent, HOT_RUNS, timedelta(minutes=10))
        return ids, week
    finally:
        await pool.close()
