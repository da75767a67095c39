-- The scheduler's claim-and-advance transaction, one per batch of due jobs.

-- name: claim_now
SELECT duetime_now();

-- name: claim_due_jobs
-- Reads only the due slice through jobs_due_idx; rows another scheduler (or an API call) holds
-- are skipped, not waited for. NO KEY UPDATE: a start or report of the job (KEY SHARE, see
-- attempt_job_lock) neither waits for the claim nor makes it skip the job. No ORDER BY: sorting every due row for each batch made a pass
-- quadratic in the backlog, and a pass claims everything due (look-ahead included) anyway.
SELECT job_id, team_id, partition, version, spec::text AS spec_text, next_run_time,
       next_effective_time, scheduled_runs
FROM jobs
WHERE partition = ANY($1::integer[])
  AND state = 'ACTIVE'
  AND next_effective_time <= $2::timestamptz
LIMIT $3
FOR NO KEY UPDATE SKIP LOCKED;

-- name: claim_jobs_ahead
-- claim_due_jobs for the slice a look-ahead grown for a herd adds, after $2 up to $3: read
-- only once the base look-ahead's slice left room in the batch, so a job due now is never
-- claimed behind a herd's rows in partitions walked before its own.
SELECT job_id, team_id, partition, version, spec::text AS spec_text, next_run_time,
       next_effective_time, scheduled_runs
FROM jobs
WHERE partition = ANY($1::integer[])
  AND state = 'ACTIVE'
  AND next_effective_time > $2::timestamptz
  AND next_effective_time <= $3::timestamptz
LIMIT $4
FOR NO KEY UPDATE SKIP LOCKED;

-- name: claim_due_by_second
-- Jobs of the partitions $1 due within $3 of $2, counted per whole second from $2 (what the
-- look-ahead grows by: duetime_core.lookahead). A walk of jobs_due_idx over that slice.
SELECT greatest(1, ceil(extract(epoch FROM next_effective_time - $2::timestamptz)))::integer
           AS second,
       count(*)::integer AS jobs
FROM jobs
WHERE partition = ANY($1::integer[])
  AND state = 'ACTIVE'
  AND next_effective_time <= $2::timestamptz + $3::interval
GROUP BY 1;

-- name: claim_insert_runs
-- Queued runs, the WAITING runs their quota or the dispatch credit held back, and records of
-- occurrences that will not run (MISSED, SKIPPED). A run's claim proof is the id of its
-- partition's token in claim_tokens ($21, recorded as the claimer raised it), for a run due at
-- most an hour after its making: duetime_prune_claim_tokens counts on that. Any other run (a
-- DST gap's record, which may name an instant a schedule's period ahead; a token the claimer
-- did not record) keeps the claimer's id ($15) and the token itself.
INSERT INTO runs (run_id, job_id, team_id, partition, nominal_time, effective_time, origin,
                  state, reason, reason_detail, attempt_limit, range_end_time,
                  occurrence_count, traceparent, trace_context, job_version, priority,
                  claim_token_id, claimed_by, claim_epoch, claim_revision, quota_limit)
SELECT u.run_id, u.job_id, u.team_id, u.partition, u.nominal_time, u.effective_time,
       'SCHEDULE', u.state, u.reason, u.reason_detail, u.attempt_limit, u.range_end_time,
       u.occurrence_count, u.traceparent, u.trace_context, u.job_version, u.priority,
       u.token_id, CASE WHEN u.token_id IS NULL THEN $15 END,
       CASE WHEN u.token_id IS NULL THEN u.claim_epoch END,
       CASE WHEN u.token_id IS NULL THEN u.claim_revision END, u.quota_limit
FROM (SELECT u.*, CASE WHEN u.nominal_time <= (SELECT duetime_now()) + interval '1 hour'
                       THEN u.recorded_id END AS token_id
      FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::integer[], $5::timestamptz[],
                  $6::timestamptz[], $7::text[], $8::text[], $9::integer[], $10::timestamptz[],
                  $11::integer[], $12::text[], $13::bigint[], $14::text[],
                  $16::bigint[], $17::bigint[], $18::text[], $19::text[], $20::bytea[],
                  $21::bigint[])
           AS u(run_id, job_id, team_id, partition, nominal_time, effective_time, state,
                reason, attempt_limit, range_end_time, occurrence_count, traceparent,
                job_version, priority, claim_epoch, claim_revision, quota_limit,
                reason_detail, trace_context, recorded_id)) u
ON CONFLICT (job_id, nominal_time, origin) DO NOTHING
RETURNING run_id;

-- name: claim_advance_jobs
-- Claims do not bump the version: a user's read-modify-write must not fail because the job
-- fired in between. $6 runs made by this claim are added to the schedule's count ($7: the
-- latest one's time, NULL when none).
UPDATE jobs j
SET next_run_time = u.next_run_time, next_effective_time = u.next_effective_time,
    state = u.state, state_reason = u.state_reason,
    scheduled_runs = j.scheduled_runs + u.made,
    last_scheduled_time = coalesce(u.last_made, j.last_scheduled_time)
FROM unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[], $4::text[], $5::text[],
            $6::bigint[], $7::timestamptz[])
     AS u(job_id, next_run_time, next_effective_time, state, state_reason, made, last_made)
WHERE j.job_id = u.job_id;
