-- Queries of the job API. Every "now" is duetime_now(), the one shiftable database clock.

-- name: db_now
SELECT duetime_now();

-- name: request_lock
-- Serialises concurrent calls that share a request_id, so only one of them acts.
SELECT pg_advisory_xact_lock(hashtextextended($1 || '/' || $2 || '/' || $3, 0));

-- name: request_id_get
SELECT fingerprint, resource_id FROM request_ids
WHERE team_id = $1 AND operation = $2 AND request_id = $3
  AND create_time > (SELECT duetime_now()) - interval '24 hours';

-- name: request_id_put
INSERT INTO request_ids (team_id, operation, request_id, fingerprint, resource_id)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (team_id, operation, request_id) DO UPDATE
    SET fingerprint = EXCLUDED.fingerprint, resource_id = EXCLUDED.resource_id,
        create_time = (SELECT duetime_now());

-- name: job_insert
-- $10..$14: the version's change, author (token id, description), fields and note.
WITH job AS (
    INSERT INTO jobs (job_id, team_id, partition, state, state_reason, spec, next_run_time,
                      next_effective_time, create_time, update_time)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
    RETURNING *
), version AS (
    INSERT INTO job_versions (job_id, version, spec, create_time, change, token_id,
                              token_description, changed_fields, note)
    SELECT job_id, version, spec, create_time, $10, $11, $12, $13, $14 FROM job
)
SELECT * FROM job;

-- name: job_get
SELECT * FROM jobs WHERE job_id = $1 AND team_id = $2 AND state <> 'DELETED';

-- name: job_get_for_update
-- The job's advisory lock first (attempt_job_lock): its waiters queue in order, so starts and
-- reports of a busy job, whose KEY SHARE locks need not wait behind this FOR UPDATE, cannot
-- keep a pause or a delete waiting. A change to state (PAUSED, DELETED) is made only under
-- this lock, in the transaction that took it: the starts' KEY SHARE re-reads such a row.
WITH held AS MATERIALIZED (SELECT pg_advisory_xact_lock(duetime_job_lock_key($1)))
SELECT j.* FROM jobs j, held
WHERE j.job_id = $1 AND j.team_id = $2 AND j.state <> 'DELETED'
FOR UPDATE OF j;

-- name: job_owned
-- Deleted jobs count: their run history stays readable.
SELECT 1 FROM jobs WHERE job_id = $1 AND team_id = $2;

-- name: job_list
-- A page of the team's jobs, newest first; a ListJobs filter (duetime_infra.pg.filters) takes
-- the marked line's place.
SELECT * FROM jobs
WHERE team_id = $1 AND state <> 'DELETED'
  AND ($2::text IS NULL OR state = $2)
  AND ($3::timestamptz IS NULL OR (create_time, job_id) < ($3, $4::uuid))
  AND /* filter */ TRUE
ORDER BY create_time DESC, job_id DESC
LIMIT $5;

-- name: job_ids_matching
-- The ids of the team's jobs (in state $3, or any) a filter matches, newest first (a batch's,
-- at most $2).
SELECT job_id FROM jobs
WHERE team_id = $1 AND state <> 'DELETED'
  AND ($3::text IS NULL OR state = $3)
  AND /* filter */ TRUE
ORDER BY create_time DESC, job_id DESC
LIMIT $2;

-- name: job_write
-- Every version gets its job_versions row, so runs can always refer to the one they ran with,
-- with the change that made it ($12..$16: as job_insert's $10..$14). $8..$11: a paused job's
-- note, author and pause call time ($11 NULL: this call's), cleared for any other state.
WITH job AS (
    UPDATE jobs
    SET state = $2, state_reason = $3, spec = $4, next_run_time = $5, next_effective_time = $6,
        pause_time = $7, pause_note = $8, pause_token_id = $9, pause_token_description = $10,
        pause_request_time = CASE WHEN $2 = 'PAUSED'
                                  THEN coalesce($11::timestamptz, (SELECT duetime_now())) END,
        version = version + 1, update_time = (SELECT duetime_now()),
        delete_time = CASE WHEN $2 = 'DELETED' THEN (SELECT duetime_now()) END
    WHERE job_id = $1
    RETURNING *
), version AS (
    INSERT INTO job_versions (job_id, version, spec, create_time, change, token_id,
                              token_description, changed_fields, note)
    SELECT job_id, version, spec, update_time, $12, $13, $14, $15, $16 FROM job
)
SELECT * FROM job;

-- name: run_insert
INSERT INTO runs (run_id, job_id, team_id, partition, nominal_time, effective_time, origin,
                  state, reason, reason_detail, attempt_limit, range_end_time,
                  occurrence_count, traceparent, job_version, priority, quota_limit,
                  trace_context)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
ON CONFLICT (job_id, nominal_time, origin) DO NOTHING
RETURNING *;

-- name: run_get
-- Runs as readers see them (shown_state: duetime_shown_state).
SELECT r.*, duetime_shown_state(r.state, r.run_id, r.nominal_time) AS shown_state
FROM runs r WHERE r.run_id = $1 AND r.job_id = $2 AND r.team_id = $3;

-- name: run_get_for_update
SELECT r.*, v.spec AS job_snapshot
FROM runs r
JOIN job_versions v ON v.job_id = r.job_id AND v.version = r.job_version
WHERE r.run_id = $1 AND r.job_id = $2 AND r.team_id = $3
FOR UPDATE OF r;

-- name: run_list
-- A page of one job's runs, latest first; a ListRuns filter takes the marked line's place.
SELECT r.*, duetime_shown_state(r.state, r.run_id, r.nominal_time) AS shown_state
FROM runs r
WHERE r.job_id = $1
  AND ($2::text IS NULL OR r.state = $2 OR ($2 = 'QUEUED' AND r.state = 'RUNNING'))
  AND ($2::text IS NULL OR duetime_shown_state(r.state, r.run_id, r.nominal_time) = $2)
  AND ($3::timestamptz IS NULL OR (r.nominal_time, r.run_id) < ($3, $4::uuid))
  AND /* filter */ TRUE
ORDER BY r.nominal_time DESC, r.run_id DESC
LIMIT $5;

-- name: run_list_team
-- run_list over every job of the team ($1), through runs_team_time_idx read backwards.
SELECT r.*, duetime_shown_state(r.state, r.run_id, r.nominal_time) AS shown_state
FROM runs r
WHERE r.team_id = $1
  AND ($2::text IS NULL OR r.state = $2 OR ($2 = 'QUEUED' AND r.state = 'RUNNING'))
  AND ($2::text IS NULL OR duetime_shown_state(r.state, r.run_id, r.nominal_time) = $2)
  AND ($3::timestamptz IS NULL OR (r.nominal_time, r.run_id) < ($3, $4::uuid))
  AND /* filter */ TRUE
ORDER BY r.nominal_time DESC, r.run_id DESC
LIMIT $5;

-- name: run_dead_letters_matching
-- The team's DEAD_LETTERED runs a filter matches, of one job ($2) or of all ($2 NULL), latest
-- first (a batch redrive's, at most $3).
SELECT r.job_id, r.run_id FROM runs r
WHERE r.team_id = $1 AND r.state = 'DEAD_LETTERED'
  AND ($2::uuid IS NULL OR r.job_id = $2)
  AND /* filter */ TRUE
ORDER BY r.nominal_time DESC, r.run_id DESC
LIMIT $3;

-- name: runs_recent_of_jobs
-- Each job's latest $2 runs (the jobs of a listed page).
SELECT r.*, duetime_shown_state(r.state, r.run_id, r.nominal_time) AS shown_state
FROM unnest($1::uuid[]) AS j(job_id)
CROSS JOIN LATERAL (
    SELECT * FROM runs x WHERE x.job_id = j.job_id
    ORDER BY x.nominal_time DESC, x.run_id DESC
    LIMIT $2
) r;

-- name: attempts_of_runs
SELECT a.* FROM run_attempts a
JOIN unnest($1::uuid[], $2::timestamptz[]) AS k(run_id, nominal_time)
  ON a.run_id = k.run_id AND a.nominal_time = k.nominal_time
ORDER BY a.run_id, a.number;

-- name: run_redrive
UPDATE runs
SET state = 'QUEUED', reason = '', reason_detail = '', attempt_limit = attempt + $3,
    budget_start_attempt = attempt, next_attempt_time = NULL, update_time = (SELECT duetime_now())
WHERE run_id = $1 AND nominal_time = $2 AND state = 'DEAD_LETTERED'
RETURNING *;

-- name: run_hold_one
-- A redriven run its team's quota holds back: WAITING instead of QUEUED.
UPDATE runs
SET state = 'WAITING', reason = $3, quota_limit = $4, reason_detail = $5,
    update_time = (SELECT duetime_now())
WHERE run_id = $1 AND nominal_time = $2
RETURNING *;

-- name: job_owned_row
SELECT * FROM jobs WHERE job_id = $1 AND team_id = $2;

-- name: run_by_key
SELECT r.*, duetime_shown_state(r.state, r.run_id, r.nominal_time) AS shown_state
FROM runs r WHERE r.job_id = $1 AND r.nominal_time = $2 AND r.origin = $3 AND r.team_id = $4;

-- name: version_at
-- The job's version in force at $2: the latest made at or before it, else its first.
SELECT version, spec, create_time FROM job_versions
WHERE job_id = $1
ORDER BY create_time <= $2 DESC, CASE WHEN create_time <= $2 THEN -version ELSE version END
LIMIT 1;

-- name: version_get
SELECT version, spec, create_time FROM job_versions WHERE job_id = $1 AND version = $2;

-- name: run_scheduled_at
-- The scheduled run record at $2 exactly (the run key), as readers see it.
SELECT r.*, duetime_shown_state(r.state, r.run_id, r.nominal_time) AS shown_state
FROM runs r WHERE r.job_id = $1 AND r.nominal_time = $2 AND r.origin = 'SCHEDULE';

-- name: run_backfilled_at
-- The latest run a backfill made at $2 (one per request), through the run key's index.
SELECT r.*, duetime_shown_state(r.state, r.run_id, r.nominal_time) AS shown_state
FROM runs r WHERE r.job_id = $1 AND r.nominal_time = $2 AND r.origin LIKE 'BACKFILL:%'
ORDER BY r.create_time DESC LIMIT 1;

-- name: run_range_reaching
-- The latest range record (MISSED or SKIPPED, many occurrences) of the job that starts before
-- $2 and reaches it, through runs_job_ranges_idx: it may stand for the occurrence at $2.
SELECT r.*, duetime_shown_state(r.state, r.run_id, r.nominal_time) AS shown_state
FROM runs r
WHERE r.job_id = $1 AND r.range_end_time IS NOT NULL
  AND r.nominal_time < $2 AND r.range_end_time >= $2 AND r.origin = 'SCHEDULE'
ORDER BY r.nominal_time DESC
LIMIT 1;

-- name: version_list
-- A page of the job's versions, newest first, with the one before the page's last (to compare
-- definitions when its change is unknown): $3 + 1 rows after version $2.
SELECT version, spec, create_time, change, token_id, token_description, changed_fields, note
FROM job_versions
WHERE job_id = $1 AND ($2::bigint IS NULL OR version < $2)
ORDER BY version DESC
LIMIT $3 + 1;

-- name: backfill_ran
-- Of the nominal times $2, those at which the job has a run (of any origin) that succeeded or
-- is active: what a SKIP_RAN backfill leaves out. Through the run key's index.
SELECT DISTINCT nominal_time FROM runs
WHERE job_id = $1 AND nominal_time = ANY($2::timestamptz[])
  AND state IN ('QUEUED', 'WAITING', 'RUNNING', 'RETRY_WAIT', 'SUCCEEDED');

-- name: backfill_made
-- The nominal times of the runs a backfill request ($2, its origin) made already, among $3
-- (not its records of occurrences a calendar excluded).
SELECT nominal_time FROM runs
WHERE job_id = $1 AND origin = $2 AND nominal_time = ANY($3::timestamptz[])
  AND reason <> 'CALENDAR';

-- name: backfill_insert
-- A backfill's runs, one statement for all of them. The run key (job, nominal time, origin)
-- keeps a request from making any of them twice.
INSERT INTO runs (run_id, job_id, team_id, partition, nominal_time, effective_time, origin,
                  state, reason, reason_detail, attempt_limit, traceparent, trace_context,
                  job_version, priority, quota_limit)
SELECT u.run_id, $1, $2, $3, u.nominal_time, u.effective_time, $4, u.state, u.reason,
       u.reason_detail, $5, u.traceparent, u.trace_context, $6, $7, u.quota_limit
FROM unnest($8::uuid[], $9::timestamptz[], $10::timestamptz[], $11::text[], $12::text[],
            $13::text[], $14::text[], $15::text[], $16::bytea[])
     AS u(run_id, nominal_time, effective_time, state, reason, reason_detail, traceparent,
          quota_limit, trace_context)
ON CONFLICT (job_id, nominal_time, origin) DO NOTHING
RETURNING run_id;
