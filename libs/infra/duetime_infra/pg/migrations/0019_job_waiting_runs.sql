-- Duetime schema, version 19: the runs that wait for their job found without the job's others.
--
-- When a run ends, its job's WAITING runs that wait for it (BUFFER_ONE, reason '') or for
-- their turn in a ONE_AT_A_TIME backfill (BACKFILL_TURN) are looked for. Through
-- runs_job_active_idx that walk read every active run of the job: a job with thousands of
-- runs held by its team's quota (a big backfill) paid for all of them at every end, under the
-- job's lock. This index holds only those waiting runs, usually none. Built without blocking
-- writes (pg/index_build.py). Expand only: older builds' statements are unchanged.
--
-- build-concurrently: runs_job_waiting_idx ON runs (job_id, origin, nominal_time) WHERE state = 'WAITING' AND reason IN ('', 'BACKFILL_TURN')

COMMENT ON INDEX runs_job_waiting_idx IS
    'a job''s runs waiting for an earlier run (BUFFER_ONE) or their backfill turn';
