-- StartAttempts and CompleteAttempts: many runs per transaction, for the top-of-the-hour herd.
-- Row locks are taken with SKIP LOCKED only, so a batch never waits for another transaction and
-- cannot be part of a deadlock; a run (or job) that another transaction holds is left to the
-- one-run path, which waits for it in the usual lock order. Attempt rows are locked in run_id
-- order, as heartbeats and the reaper do.

-- name: attempt_batch_runs_lock
-- The runs named, those no other transaction holds, with their open attempt (if any) and
-- their definition's text (decoded through a cache: a herd shares few versions).
SELECT r.*, v.spec::text AS spec_text, a.worker_id AS open_worker_id,
       a.lease_expire_time AS open_lease_expire_time, a.cancel_reason AS open_cancel_reason,
       duetime_now() AS now
FROM runs r
JOIN job_versions v ON v.job_id = r.job_id AND v.version = r.job_version
LEFT JOIN attempts a
       ON a.run_id = r.run_id AND a.nominal_time = r.nominal_time AND a.number = r.attempt
      AND a.end_time IS NULL
WHERE r.run_id = ANY($1::uuid[])
FOR UPDATE OF r SKIP LOCKED;

-- name: attempt_batch_jobs_lock
-- The jobs of those runs that no other transaction holds (pause, delete and overlap are
-- decided under the job's row lock, as for one run).
SELECT job_id, state, duetime_now() AS now FROM jobs
WHERE job_id = ANY($1::uuid[])
FOR UPDATE SKIP LOCKED;

-- name: attempt_batch_overlap_runs
-- attempt_overlap_runs for many jobs at once (each run's own row is left out by the caller).
SELECT r.job_id, r.run_id, r.nominal_time, r.state, r.attempt,
       a.number IS NOT NULL AS open_attempt, coalesce(a.cancel_reason, '') AS cancel_reason
FROM runs r
LEFT JOIN attempts a
       ON a.run_id = r.run_id AND a.nominal_time = r.nominal_time AND a.number = r.attempt
      AND a.end_time IS NULL
WHERE r.job_id = ANY($1::uuid[])
  AND r.state IN ('QUEUED', 'WAITING', 'RUNNING', 'RETRY_WAIT')
  AND (duetime_run_holds_job(r.state, r.attempt) OR (r.state = 'WAITING' AND r.reason = ''));

-- name: attempt_batch_start
-- attempt_start for many locked QUEUED runs: each gets the next attempt number and an attempt
-- row under its lease; $5 is each run's attempt timeout plus the grace.
WITH req AS (
    SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::text[], $5::interval[])
        AS u(run_id, nominal_time, delivery_id, worker_id, deadline_after)
), started AS (
    UPDATE runs r
    SET state = 'RUNNING', attempt = r.attempt + 1, start_delivery_id = req.delivery_id,
        first_start_time = coalesce(r.first_start_time, duetime_now()),
        next_attempt_time = NULL, reason = '', reason_detail = '', update_time = duetime_now()
    FROM req
    WHERE r.run_id = req.run_id AND r.nominal_time = req.nominal_time AND r.state = 'QUEUED'
    RETURNING r.run_id, r.nominal_time, r.attempt, r.partition, req.delivery_id, req.worker_id,
              req.deadline_after
)
INSERT INTO attempts (run_id, nominal_time, number, partition, worker_id, delivery_id,
                      start_time, lease_expire_time, deadline)
SELECT s.run_id, s.nominal_time, s.attempt, s.partition, s.worker_id, s.delivery_id,
       duetime_now(), duetime_now() + $6::interval, duetime_now() + s.deadline_after
FROM started s
RETURNING run_id, number, start_time, lease_expire_time, duetime_now() AS now;

-- name: attempt_batch_close_succeeded
-- Closes the named open attempts (their runs already locked by this transaction) as
-- SUCCEEDED at $4, locking them in run_id order first, and marks their runs SUCCEEDED.
WITH req AS (
    SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::integer[])
        AS u(run_id, nominal_time, number)
), locked AS (
    SELECT a.run_id, a.nominal_time, a.number
    FROM attempts a
    JOIN req ON a.run_id = req.run_id AND a.nominal_time = req.nominal_time
            AND a.number = req.number
    WHERE a.end_time IS NULL
    ORDER BY a.run_id, a.nominal_time, a.number
    FOR UPDATE OF a
), closed AS (
    UPDATE attempts a
    SET end_time = $4, outcome = 'SUCCEEDED', error = ''
    FROM locked
    WHERE a.run_id = locked.run_id AND a.nominal_time = locked.nominal_time
      AND a.number = locked.number AND a.end_time IS NULL
    RETURNING a.run_id, a.nominal_time
)
UPDATE runs r
SET state = 'SUCCEEDED', reason = '', reason_detail = '', next_attempt_time = NULL,
    update_time = duetime_now()
FROM closed
WHERE r.run_id = closed.run_id AND r.nominal_time = closed.nominal_time
RETURNING r.run_id;

-- name: attempt_batch_jobs_waiting
-- Which of these jobs have a WAITING run (BUFFER_ONE: no reason), to be released once a run
-- of theirs ended.
SELECT DISTINCT job_id FROM runs
WHERE job_id = ANY($1::uuid[]) AND state = 'WAITING' AND reason = '';
