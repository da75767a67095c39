-- Starts and reports, many runs per transaction (a single one is a batch of one): see
-- duetime_infra.pg.attempts.starts. A trying pass takes its row locks with SKIP LOCKED only, so
-- it never waits for another transaction and cannot be part of a deadlock; a run (or job) that
-- another transaction holds is left to a waiting pass (one entry), which sends the same
-- statements without SKIP LOCKED (duetime_infra.pg.sql.waiting) and waits for it in the usual
-- lock order: the run's row, then its job (attempt_job_lock). A run's latest attempt is in its
-- row (schema 27): its open attempt is there while attempt_end_time is NULL, and only a RUNNING
-- run has one (duetime_attempt_open). The clock is read once a statement (attempts.sql).
-- A join to the runs named also names them by ``run_id = ANY($1)``: the planner would
-- otherwise merge or hash the request with every QUEUED or RUNNING run of the table, costing
-- each batch a scan that grows with the herd.

-- name: attempt_batch_runs_lock
-- The runs named, those no other transaction holds, with their open attempt (if any) and
-- their definition's text (decoded through a cache: a herd shares few versions).
SELECT r.*, v.spec::text AS spec_text, o.worker_id AS open_worker_id,
       o.lease_expire_time AS open_lease_expire_time, o.cancel_reason AS open_cancel_reason,
       CASE WHEN o.early THEN o.start_time END AS open_call_time,
       (SELECT duetime_now()) AS now,
       (SELECT t.default_call_signing FROM teams t WHERE t.team_id = r.team_id)
           AS team_call_signing,
       ARRAY(SELECT k.key_id FROM team_signing_keys k
             WHERE k.team_id = r.team_id AND k.retire_time IS NULL
             ORDER BY k.create_time, k.key_id) AS team_key_ids
FROM runs r
JOIN job_versions v ON v.job_id = r.job_id AND v.version = r.job_version
LEFT JOIN LATERAL (
    SELECT r.attempt_worker_id AS worker_id, r.attempt_lease_expire_time AS lease_expire_time,
           r.attempt_cancel_reason AS cancel_reason, r.attempt_early AS early,
           r.attempt_start_time AS start_time
    WHERE duetime_attempt_open(r.state, r.attempt_end_time)
) o ON true
WHERE r.run_id = ANY($1::uuid[])
FOR UPDATE OF r SKIP LOCKED;

-- name: attempt_batch_reports_lock
-- attempt_batch_runs_lock for reports: the runs and their open attempt, and only for the runs
-- $2 (reports other than a success: a retry, hand-back or dead-letter needs it) their
-- definition's text, target kind and overlap policy, so a herd's successes read what they
-- decide on only (each a subquery under its CASE, run for those rows only: a join to
-- job_versions would be planned as a scan of every version).
SELECT r.run_id, r.nominal_time, r.job_id, r.job_version, r.origin, r.team_id, r.state,
       r.attempt, r.attempt_limit, r.budget_start_attempt, r.priority, r.effective_time,
       r.eligible_time, r.traceparent, r.trace_context,
       CASE WHEN duetime_attempt_open(r.state, r.attempt_end_time)
            THEN r.attempt_worker_id END AS open_worker_id,
       CASE WHEN r.run_id = ANY($2::uuid[]) THEN
           (SELECT v.spec::text FROM job_versions v
            WHERE v.job_id = r.job_id AND v.version = r.job_version) END AS spec_text,
       CASE WHEN r.run_id = ANY($2::uuid[]) THEN
           (SELECT v.spec->'target'->>'kind' FROM job_versions v
            WHERE v.job_id = r.job_id AND v.version = r.job_version) END AS target_kind,
       CASE WHEN r.run_id = ANY($2::uuid[]) THEN
           (SELECT v.spec->>'overlap' FROM job_versions v
            WHERE v.job_id = r.job_id AND v.version = r.job_version) END AS job_overlap,
       (SELECT duetime_now()) AS now
FROM runs r
WHERE r.run_id = ANY($1::uuid[])
FOR UPDATE OF r SKIP LOCKED;

-- name: attempt_batch_jobs_lock
-- The jobs $1 whose lock no other transaction holds (pause, delete and overlap are decided
-- under the job's lock, as for one run: attempt_job_lock), taken without waiting: shared with
-- other such starts where $2 says so (attempt_job_lock_shared), alone otherwise.
SELECT j.job_id, j.state, (SELECT duetime_now()) AS now
FROM unnest($1::uuid[], $2::boolean[]) AS u(job_id, shared)
JOIN jobs j ON j.job_id = u.job_id
WHERE CASE WHEN u.shared THEN pg_try_advisory_xact_lock_shared(duetime_job_lock_key(u.job_id))
           ELSE pg_try_advisory_xact_lock(duetime_job_lock_key(u.job_id)) END
FOR KEY SHARE OF j SKIP LOCKED;

-- name: attempt_overlap_runs
-- The open runs of the jobs $1 that hold their job (duetime_run_holds_job) or wait for it
-- under BUFFER_ONE (WAITING without a reason), through runs_job_active_idx: the cost grows with
-- those runs, not with the jobs' history. The caller leaves each start's own run out.
SELECT r.job_id, r.run_id, r.nominal_time, r.state, r.attempt,
       duetime_attempt_open(r.state, r.attempt_end_time) AS open_attempt,
       CASE WHEN duetime_attempt_open(r.state, r.attempt_end_time)
            THEN r.attempt_cancel_reason ELSE '' END AS cancel_reason
FROM runs r
WHERE r.job_id = ANY($1::uuid[])
  AND r.state IN ('QUEUED', 'WAITING', 'RUNNING', 'RETRY_WAIT')
  AND (duetime_run_holds_job(r.state, r.attempt) OR (r.state = 'WAITING' AND r.reason = ''));

-- name: attempt_start
-- QUEUED -> RUNNING for the locked runs named: each gets the next attempt number and its
-- attempt in its row under its lease, the attempt before it (if any) moved to the attempts
-- table (both read the row as the statement found it; $9 names the runs that have one, so a
-- first attempt costs no look for it); $5 is each run's attempt timeout plus the grace, $7 its
-- call time when it starts ahead of its time (NULL: now), from which its start, lease ($8 for
-- those) and deadline count.
WITH req AS (
    SELECT u.*, coalesce(u.call_time, (SELECT duetime_now())) AS at
    FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::text[], $5::interval[],
                $7::timestamptz[])
        AS u(run_id, nominal_time, delivery_id, worker_id, deadline_after, call_time)
), moved AS (
    INSERT INTO attempts (run_id, nominal_time, number, partition, worker_id, start_time,
                          lease_expire_time, deadline, end_time, outcome, error, cancel_reason,
                          early, beat_time, call_progress)
    SELECT r.run_id, r.nominal_time, r.attempt, r.partition, r.attempt_worker_id,
           r.attempt_start_time, r.attempt_lease_expire_time, r.attempt_deadline,
           r.attempt_end_time, r.attempt_outcome, r.attempt_error, r.attempt_cancel_reason,
           r.attempt_early, r.attempt_beat_time, r.attempt_call_progress
    FROM runs r
    JOIN req ON r.run_id = req.run_id AND r.nominal_time = req.nominal_time
    WHERE r.state = 'QUEUED' AND r.attempt_start_time IS NOT NULL
      AND r.run_id = ANY($9::uuid[])
)
UPDATE runs r
SET state = 'RUNNING', attempt = r.attempt + 1, start_delivery_id = req.delivery_id,
    first_start_time = coalesce(r.first_start_time, req.at),
    next_attempt_time = NULL, reason = '', reason_detail = '',
    update_time = (SELECT duetime_now()),
    attempt_worker_id = req.worker_id, attempt_start_time = req.at,
    attempt_lease_expire_time =
        req.at + CASE WHEN req.call_time IS NULL THEN $6::interval ELSE $8::interval END,
    attempt_deadline = req.at + req.deadline_after, attempt_end_time = NULL,
    attempt_outcome = NULL, attempt_error = '', attempt_cancel_reason = '',
    attempt_call_progress = NULL, attempt_early = req.call_time IS NOT NULL,
    attempt_beat_time = NULL
FROM req
WHERE r.run_id = req.run_id AND r.nominal_time = req.nominal_time AND r.state = 'QUEUED'
  AND r.run_id = ANY($1::uuid[])
RETURNING r.run_id, r.attempt AS number, r.attempt_start_time AS start_time,
          r.attempt_lease_expire_time AS lease_expire_time, (SELECT duetime_now()) AS now;

-- name: attempt_batch_close_succeeded
-- Closes the named open attempts (their runs already locked by this transaction) as
-- SUCCEEDED at $4 and marks their runs SUCCEEDED, in one write of each run's row. $5, each
-- call's reported start, becomes the start of an attempt started ahead of its time (and of
-- its run's first start, for a first attempt: duetime_reported_start). $6: how far each call
-- got, as its report says (NULL: as the heartbeats last said). The delivery id, which serves
-- only an attempt in flight (a repeated start, its process's hold), is cleared.
WITH req AS (
    SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::integer[], $5::timestamptz[],
                         $6::text[])
        AS u(run_id, nominal_time, number, call_time, call)
)
UPDATE runs r
SET state = 'SUCCEEDED', reason = '', reason_detail = '', next_attempt_time = NULL,
    start_delivery_id = NULL, attempt_end_time = $4, attempt_outcome = 'SUCCEEDED',
    attempt_error = '', attempt_call_progress = coalesce(req.call, r.attempt_call_progress),
    attempt_start_time =
        duetime_reported_start(r.attempt_early, r.attempt_start_time, req.call_time, $4),
    first_start_time =
        CASE WHEN r.attempt_early AND r.attempt = 1
             THEN duetime_reported_start(true, r.attempt_start_time, req.call_time, $4)
             ELSE r.first_start_time END,
    update_time = (SELECT duetime_now())
FROM req
WHERE r.run_id = req.run_id AND r.nominal_time = req.nominal_time AND r.attempt = req.number
  AND duetime_attempt_open(r.state, r.attempt_end_time) AND r.run_id = ANY($1::uuid[])
RETURNING r.run_id, r.attempt_early AND r.attempt = 1 AS first_early,
          r.attempt_start_time AS start_time;

-- name: attempt_batch_jobs_waiting
-- Which of these jobs have a WAITING run (BUFFER_ONE: no reason; a ONE_AT_A_TIME backfill's
-- turn), to be released once a run of theirs ended.
SELECT DISTINCT job_id FROM runs
WHERE job_id = ANY($1::uuid[]) AND state = 'WAITING' AND reason IN ('', 'BACKFILL_TURN');
