-- The attempt-lease service (StartAttempt, Heartbeat, CompleteAttempt), retry requeue and the
-- reaper. Every "now" is duetime_now(), or a value a statement of the same transaction read
-- from it, read as (SELECT duetime_now()): once a statement, where duetime_now() alone (a
-- function PostgreSQL does not inline) runs for every row. Every query file does the same.
-- Lock order, everywhere: the run's row, then its job (attempt_job_lock), then other runs of
-- the job (SKIP LOCKED when a start wants them). A run's latest attempt is in its row (schema
-- 27), its open attempt while attempt_end_time is NULL (only a RUNNING run has one); the
-- attempts table holds the attempts before it.

-- name: attempt_job_lock
-- Overlap, pause and deletion are decided under the job's lock, and every run that ends takes
-- it too, so a WAITING run cannot miss its release: the job's advisory lock (one start or
-- report of the job at a time) and its row's KEY SHARE lock (waits for the API and the
-- reaper, not for a claim: migration 0016).
WITH held AS MATERIALIZED (SELECT pg_advisory_xact_lock(duetime_job_lock_key($1)))
SELECT j.job_id, j.state, (SELECT duetime_now()) AS now FROM jobs j, held
WHERE j.job_id = $1
FOR KEY SHARE OF j;

-- name: attempt_job_lock_shared
-- attempt_job_lock for a start that shares the job's advisory lock with other such starts
-- (duetime_core.attempts.shares_job_lock): it waits only for those that hold it alone.
WITH held AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(duetime_job_lock_key($1)))
SELECT j.job_id, j.state, (SELECT duetime_now()) AS now FROM jobs j, held
WHERE j.job_id = $1
FOR KEY SHARE OF j;

-- name: attempt_newer_scheduled_exists
-- RUN_ONCE at start: is there a later scheduled occurrence that runs or ran?
SELECT EXISTS (
    SELECT 1 FROM runs
    WHERE job_id = $1 AND nominal_time > $2 AND origin = 'SCHEDULE'
      AND state IN ('QUEUED', 'WAITING', 'RUNNING', 'RETRY_WAIT', 'SUCCEEDED')
);

-- name: attempt_renew_replayed
-- Repeated starts (the same delivery from the same worker: the first answer was lost, or came
-- too late) renew their open attempts' leases as a heartbeat does, never shortening one, so an
-- answer that took several tries to arrive does not bring too little lease left. An attempt
-- being told to cancel is not renewed. The caller holds the runs' locks.
UPDATE runs r
SET attempt_lease_expire_time =
        greatest(r.attempt_lease_expire_time, (SELECT duetime_now()) + $4::interval)
FROM unnest($1::uuid[], $2::timestamptz[], $3::integer[]) AS k(run_id, nominal_time, number)
WHERE r.run_id = k.run_id AND r.nominal_time = k.nominal_time AND r.attempt = k.number
  AND duetime_attempt_open(r.state, r.attempt_end_time) AND r.attempt_cancel_reason = ''
  AND r.run_id = ANY($1::uuid[])
RETURNING r.run_id, r.attempt_lease_expire_time AS lease_expire_time;

-- name: attempt_run_set_state
-- A run that will not start (skipped, cancelled, missed, waiting), or that an attempt's end
-- moved on (succeeded, retry wait, dead-lettered, cancelled): none of them RUNNING, so the
-- delivery that started its last attempt is no longer kept (it answers only a repeated start
-- of a running attempt).
UPDATE runs
SET state = $3, reason = $4, reason_detail = $5, next_attempt_time = $6,
    start_delivery_id = NULL, update_time = (SELECT duetime_now())
WHERE run_id = $1 AND nominal_time = $2
RETURNING *;

-- name: attempt_run_hand_back
-- A handed-back attempt (one of the run's first few): the run is QUEUED again from now ($3)
-- and its attempt limit rises by one, so the attempt number still rises (fencing) but the
-- budget is not spent. Its start's delivery is no longer kept, as in attempt_run_set_state.
UPDATE runs
SET state = 'QUEUED', reason = '', reason_detail = $4, next_attempt_time = $3,
    attempt_limit = attempt_limit + 1, start_delivery_id = NULL,
    update_time = (SELECT duetime_now())
WHERE run_id = $1 AND nominal_time = $2 AND state = 'RUNNING';

-- name: attempt_run_hand_backs
-- How many of the run's attempts before $3 were handed back since its current budget began
-- ($4, the run's budget_start_attempt: a redrive starts a fresh budget, free hand-backs
-- included), under the run's lock: past a few, a hand-back spends the budget. The attempts
-- before the run's latest are in the attempts table, read through its primary key.
SELECT count(*)::integer FROM attempts
WHERE run_id = $1 AND nominal_time = $2 AND number > $4 AND number < $3
  AND outcome = 'HANDED_BACK';

-- name: attempt_request_cancel
-- CANCEL_PREVIOUS: the previous runs' open attempts are told to stop (by the next heartbeat).
-- A run another transaction holds (its report or its reaping) is skipped: the start asks
-- again shortly, and asks again for what is still open then.
UPDATE runs r
SET attempt_cancel_reason = $4
FROM (
    SELECT run_id, nominal_time FROM runs
    WHERE (run_id, nominal_time, attempt)
          IN (SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::integer[]))
      AND duetime_attempt_open(state, attempt_end_time) AND attempt_cancel_reason = ''
      AND run_id = ANY($1::uuid[])
    FOR UPDATE SKIP LOCKED
) c
WHERE r.run_id = c.run_id AND r.nominal_time = c.nominal_time;

-- name: attempt_cancel_idle_runs
-- CANCEL_PREVIOUS: previous runs between attempts are cancelled at once; one that is locked
-- (a worker is starting it right now) is skipped and the start asks again shortly.
UPDATE runs r
SET state = 'CANCELLED', reason = $3, reason_detail = $4, next_attempt_time = NULL,
    update_time = (SELECT duetime_now())
FROM (
    SELECT run_id, nominal_time FROM runs
    WHERE (run_id, nominal_time) IN (SELECT * FROM unnest($1::uuid[], $2::timestamptz[]))
      AND duetime_run_holds_job(state, attempt) AND state <> 'RUNNING'
    FOR UPDATE SKIP LOCKED
) c
WHERE r.run_id = c.run_id AND r.nominal_time = c.nominal_time
RETURNING r.run_id;

-- name: attempt_release_waiting
-- BUFFER_ONE: once no run of the job holds it any more, its WAITING run (no reason: waiting
-- for the earlier run) is let go, locked here; the caller admits it to dispatch. Found through
-- runs_job_waiting_idx; the job's holders are looked for only when such a run waits.
SELECT r.*, (SELECT duetime_now()) AS now,
       (SELECT v.spec->'target'->>'kind' FROM job_versions v
        WHERE v.job_id = r.job_id AND v.version = r.job_version) AS target_kind,
       (SELECT v.spec->>'overlap' FROM job_versions v
        WHERE v.job_id = r.job_id AND v.version = r.job_version) AS job_overlap
FROM runs r
WHERE r.job_id = $1 AND r.state = 'WAITING' AND r.reason = ''
  AND NOT EXISTS (
    SELECT 1 FROM runs h
    WHERE h.job_id = r.job_id AND h.state IN ('QUEUED', 'WAITING', 'RUNNING', 'RETRY_WAIT')
      AND duetime_run_holds_job(h.state, h.attempt))
ORDER BY r.nominal_time
LIMIT 1
FOR UPDATE OF r;

-- name: attempt_backfill_turns
-- ONE_AT_A_TIME backfills of the job $1 with no run under way (every run of theirs ended or
-- waiting its turn): the next run of each, its oldest occurrence, locked; the caller admits
-- it to dispatch. Each origin is one backfill request.
WITH turns AS (
    SELECT origin, min(nominal_time) AS first FROM runs
    WHERE job_id = $1 AND state = 'WAITING' AND reason = 'BACKFILL_TURN'
    GROUP BY origin
), free AS (
    SELECT t.origin, t.first FROM turns t
    WHERE NOT EXISTS (
        SELECT 1 FROM runs o
        WHERE o.job_id = $1 AND o.origin = t.origin AND o.reason <> 'BACKFILL_TURN'
          AND o.state IN ('QUEUED', 'WAITING', 'RUNNING', 'RETRY_WAIT'))
)
SELECT r.*, (SELECT duetime_now()) AS now,
       (SELECT v.spec->'target'->>'kind' FROM job_versions v
        WHERE v.job_id = r.job_id AND v.version = r.job_version) AS target_kind,
       (SELECT v.spec->>'overlap' FROM job_versions v
        WHERE v.job_id = r.job_id AND v.version = r.job_version) AS job_overlap
FROM runs r
JOIN free f ON r.origin = f.origin AND r.nominal_time = f.first
WHERE r.job_id = $1 AND r.state = 'WAITING' AND r.reason = 'BACKFILL_TURN'
FOR UPDATE OF r;

-- name: attempt_run_release
-- Runs let go to dispatch (a BUFFER_ONE release, a held run, a due retry): QUEUED, with the
-- time they became eligible ($3, NULL: their effective time) and their not-before ($4, NULL:
-- unchanged). A BUFFER_ONE release's not-before is the release, so the misfire threshold
-- counts from there.
UPDATE runs r
SET state = 'QUEUED', reason = '', reason_detail = '',
    eligible_time = coalesce(u.eligible_time, r.eligible_time),
    next_attempt_time = coalesce(u.not_before, r.next_attempt_time),
    update_time = (SELECT duetime_now())
FROM unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[], $4::timestamptz[])
     AS u(run_id, nominal_time, eligible_time, not_before)
WHERE r.run_id = u.run_id AND r.nominal_time = u.nominal_time;

-- name: attempt_run_hold
-- Runs held back before dispatch: WAITING with reason QUOTA (and the limit) or FAIR_SHARE.
UPDATE runs r
SET state = 'WAITING', reason = u.reason, quota_limit = u.quota_limit,
    reason_detail = u.reason_detail,
    next_attempt_time = coalesce(u.not_before, r.next_attempt_time),
    update_time = (SELECT duetime_now())
FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::text[], $5::text[],
            $6::timestamptz[])
     AS u(run_id, nominal_time, reason, quota_limit, reason_detail, not_before)
WHERE r.run_id = u.run_id AND r.nominal_time = u.nominal_time;

-- name: attempt_team_notification
-- The dead-letter event carries where to alert the team and how the alert is signed (the
-- team's default), read only when a run is dead-lettered.
SELECT notification_url, default_call_signing FROM teams WHERE team_id = $1;

-- name: attempt_close
-- Closes the run's open attempt $3. $6 is the transaction's reading of duetime_now(), so the
-- run's next attempt time and the attempt's end are measured from the same instant. $7, the
-- call's reported start, becomes the start of an attempt started ahead of its time (never
-- before the time it was given). $8: how far the call got, as the report says (NULL: as the
-- heartbeats last said). Its delivery id, which serves only an attempt in flight, is cleared.
-- $9: the attempt ran (a report other than a hand-back), so a first attempt started ahead of
-- its time gives its run its first start too (first_early). The caller then moves the run on
-- (attempt_run_set_state, attempt_run_hand_back).
UPDATE runs
SET attempt_end_time = $6, attempt_outcome = $4, attempt_error = $5,
    attempt_call_progress = coalesce($8::text, attempt_call_progress), start_delivery_id = NULL,
    attempt_start_time =
        duetime_reported_start(attempt_early, attempt_start_time, $7::timestamptz, $6),
    first_start_time =
        CASE WHEN $9 AND attempt_early AND attempt = 1
             THEN duetime_reported_start(true, attempt_start_time, $7::timestamptz, $6)
             ELSE first_start_time END
WHERE run_id = $1 AND nominal_time = $2 AND attempt = $3
  AND duetime_attempt_open(state, attempt_end_time)
RETURNING attempt_end_time AS end_time, attempt_cancel_reason AS cancel_reason,
          $9 AND attempt_early AND attempt = 1 AS first_early, attempt_start_time AS start_time;

-- name: attempt_heartbeat
-- One statement per beat, whatever the fleet holds: renews the listed attempts that are still
-- open, belong to this worker, have no cancel request and whose job is not deleted (nor
-- paused, for an attempt started ahead of its time whose call has not begun: it is told to
-- cancel, and handed back unrun), and answers one row per listed attempt, in order. An attempt
-- being told to cancel is not renewed: its worker acknowledges within the lease, or the reaper
-- closes it. A renewal never shortens a lease (an attempt started ahead of its time holds one
-- from its call time). A closed attempt of this worker says whether the reaper closed it (its
-- lease or deadline had run out when it ended): a beat for it is a fencing refusal, unlike one
-- crossing the worker's own report.
-- $5 is each attempt's call progress as the worker says it (NULL: not said); the renewal
-- records it in the same statement, and it only moves forward (NOT_BEGUN, then BEGUN).
-- Only what changes is written (and locked): a lease with more than two thirds of $4 left is
-- answered as it stands, unless the beat moves the call's progress. A herd's beats each list
-- thousands of attempts; rewriting them all was most of its database time.
-- A beat listing an early attempt whose call window is open (duetime_pre_call_from) writes its
-- worker process's one record (worker_incarnation_beats, $6 the incarnation), the reaper's
-- proof that the call may have begun (schema 14): it commits with the statement, before the
-- answer lets the worker call. The early attempts the process started ($6, their delivery id)
-- are held by that record (duetime_early_hold, schema 26) instead of a renewal each: from
-- their window on, their lease is answered as counted from the record, which the reaper
-- honours; before it, their short lease from the call time stands unwritten (the worker calls
-- only after its pre-call beat). (Two beats of one process at once, on two schedulers after a
-- reconnect, could lock that row and the attempts in either order; PostgreSQL then aborts
-- one, and its stream is opened again.)
-- $7 is each attempt's nominal time as the worker says it (NULL: not said). Runs are
-- partitioned by week of nominal time: each one's is resolved first, coalesce(the run at that
-- time, the run by run_id alone), whose first probe reads one partition (pruned at run time,
-- generic plan or not) and whose second, in every partition, runs only when the first misses
-- (an older worker, a wrong time); the joins then go by the whole key. An attempt that a later
-- one replaced is in the attempts table, read (only for such an attempt) to tell whether the
-- reaper closed it.
WITH req AS (
    SELECT k.run_id, k.number, k.ord, k.call,
           coalesce((SELECT r.nominal_time FROM runs r
                     WHERE r.run_id = k.run_id AND r.nominal_time = k.nominal_time),
                    (SELECT r.nominal_time FROM runs r WHERE r.run_id = k.run_id))
               AS nominal_time
    FROM unnest($1::uuid[], $2::integer[], $5::text[], $7::timestamptz[])
         WITH ORDINALITY AS k(run_id, number, call, nominal_time, ord)
), cur AS (
    SELECT req.ord, req.call, r.run_id, r.nominal_time, r.attempt AS number,
           r.attempt_cancel_reason AS cancel_reason, r.attempt_end_time AS end_time,
           r.attempt_lease_expire_time AS lease_expire_time, r.attempt_start_time AS start_time,
           r.attempt_early AND $6::text <> ''
               AND duetime_incarnation(r.start_delivery_id) = $6::text AS own_early,
           duetime_reaped(r.attempt_outcome, r.attempt_end_time, r.attempt_lease_expire_time,
                          r.attempt_deadline) AS reaped,
           j.state AS job_state,
           r.attempt_early AND r.attempt_start_time > (SELECT duetime_now())
               AND j.state = 'PAUSED' AS paused_unbegun,
           req.call IS NOT NULL AND r.attempt_call_progress IS DISTINCT FROM
               CASE WHEN req.call = 'BEGUN' THEN 'BEGUN'
                    ELSE coalesce(r.attempt_call_progress, req.call) END AS progress_moves,
           CASE WHEN r.attempt_early AND r.attempt_end_time IS NULL
                     AND duetime_pre_call_from(r.attempt_start_time) <= (SELECT duetime_now())
                THEN duetime_pre_call_from(r.attempt_start_time) END AS pre_call_from
    FROM req
    JOIN runs r
      ON r.run_id = req.run_id AND r.nominal_time = req.nominal_time AND r.attempt = req.number
     AND r.attempt_worker_id = $3
    LEFT JOIN jobs j ON j.job_id = r.job_id
), held AS (
    -- Renewable: open, not being cancelled, its job neither deleted nor paused before the call.
    SELECT cur.* FROM cur
    WHERE cur.end_time IS NULL AND cur.cancel_reason = ''
      AND coalesce(cur.job_state, 'DELETED') <> 'DELETED' AND NOT cur.paused_unbegun
), window_opened AS (
    SELECT h.since, w.beat_time AS seen, w.lease AS seen_lease
    FROM (SELECT max(held.pre_call_from) AS since FROM held) h
    LEFT JOIN worker_incarnation_beats w ON w.worker_id = $3 AND w.incarnation = $6::text
), process_beat AS (
    -- Only when a listed early attempt's window opened after the process's last record.
    INSERT INTO worker_incarnation_beats AS w (worker_id, incarnation, beat_time, lease)
    SELECT $3, $6::text, (SELECT duetime_now()), $4::interval
    FROM window_opened WHERE since IS NOT NULL
    ON CONFLICT (worker_id, incarnation) DO UPDATE
    SET beat_time = excluded.beat_time, lease = greatest(w.lease, excluded.lease)
    WHERE w.beat_time < (SELECT since FROM window_opened)
    RETURNING w.beat_time, w.lease
), record AS (
    -- The record as this statement leaves it (or as read, when it covers the newest window:
    -- it only grows); none when another scheduler's beat wrote it meanwhile (then renewed).
    SELECT coalesce(p.beat_time, CASE WHEN o.seen >= o.since THEN o.seen END) AS beat_time,
           coalesce(p.lease, CASE WHEN o.seen >= o.since THEN o.seen_lease END) AS lease
    FROM window_opened o LEFT JOIN process_beat p ON true
), judged AS (
    SELECT held.*, greatest(held.lease_expire_time,
                            CASE WHEN held.own_early THEN duetime_early_hold(
                                true, held.start_time, record.beat_time, record.lease) END)
               AS lease_held
    FROM held, record
), to_renew AS (
    -- Due a renewal: the call's progress moves, or the lease held has two thirds or less left,
    -- except an early attempt of this process before its window (its pre-call beat holds it).
    SELECT judged.* FROM judged
    WHERE judged.progress_moves
       OR (judged.lease_held < (SELECT duetime_now()) + $4::interval * 2 / 3
           AND NOT (judged.own_early AND judged.pre_call_from IS NULL))
), locked AS (
    -- Locks in run_id order, so two beats cannot deadlock; the reaper skips locked runs.
    SELECT r.run_id, r.nominal_time, r.attempt, to_renew.call
    FROM runs r
    JOIN to_renew ON r.run_id = to_renew.run_id AND r.nominal_time = to_renew.nominal_time
                 AND r.attempt = to_renew.number
    WHERE duetime_attempt_open(r.state, r.attempt_end_time) AND r.attempt_cancel_reason = ''
      AND r.run_id = ANY($1::uuid[])
    ORDER BY r.run_id, r.nominal_time
    FOR UPDATE OF r
), renewed AS (
    UPDATE runs r
    SET attempt_lease_expire_time =
            greatest(r.attempt_lease_expire_time, (SELECT duetime_now()) + $4::interval),
        attempt_beat_time = (SELECT duetime_now()),
        attempt_call_progress = CASE WHEN locked.call = 'BEGUN' THEN 'BEGUN'
                                     ELSE coalesce(r.attempt_call_progress, locked.call) END
    FROM locked
    WHERE r.run_id = locked.run_id AND r.nominal_time = locked.nominal_time
      AND r.attempt = locked.attempt AND r.attempt_end_time IS NULL
      AND r.run_id = ANY($1::uuid[])
    RETURNING r.run_id, r.attempt AS number, r.attempt_lease_expire_time AS lease_expire_time
)
SELECT req.ord, req.run_id, req.number,
       cur.run_id IS NOT NULL AND cur.end_time IS NULL AS open,
       coalesce(cur.reaped,
                CASE WHEN cur.ord IS NULL THEN (
                    SELECT duetime_reaped(a.outcome, a.end_time, a.lease_expire_time, a.deadline)
                    FROM attempts a
                    WHERE a.run_id = req.run_id AND a.nominal_time = req.nominal_time
                      AND a.number = req.number AND a.worker_id = $3) END,
                false) AS reaped,
       coalesce(cur.cancel_reason, '') AS cancel_reason,
       coalesce(cur.job_state, 'DELETED') = 'DELETED' AS job_deleted,
       coalesce(cur.paused_unbegun, false) AS job_paused,
       CASE WHEN to_renew.ord IS NOT NULL THEN renewed.lease_expire_time
            ELSE judged.lease_held END AS lease_expire_time,
       (SELECT duetime_now()) AS now
FROM req
LEFT JOIN cur ON cur.ord = req.ord
LEFT JOIN judged ON judged.ord = req.ord
LEFT JOIN to_renew ON to_renew.ord = req.ord
LEFT JOIN renewed ON renewed.run_id = req.run_id AND renewed.number = req.number
ORDER BY req.ord;

-- name: retry_requeue_due
-- RETRY_WAIT runs of the owned partitions due within the look-ahead, locked for the caller to
-- admit to dispatch (queued again, or held by the team's quota); they keep next_attempt_time,
-- and StartAttempt does not start them before it.
SELECT r.*, (SELECT duetime_now()) AS now,
       (SELECT v.spec->'target'->>'kind' FROM job_versions v
        WHERE v.job_id = r.job_id AND v.version = r.job_version) AS target_kind,
       (SELECT v.spec->>'overlap' FROM job_versions v
        WHERE v.job_id = r.job_id AND v.version = r.job_version) AS job_overlap
FROM runs r
WHERE r.partition = ANY($1::integer[]) AND r.state = 'RETRY_WAIT'
  AND r.next_attempt_time <= (SELECT duetime_now()) + $2::interval
ORDER BY r.next_attempt_time
LIMIT $3
FOR UPDATE SKIP LOCKED;

-- name: reaper_expired
-- Open attempts of the owned partitions whose lease ran out or whose deadline passed, each
-- found by a range scan of its index of running runs (cost grows with the expired ones, not
-- with those running: the join probes the expired run ids, which a plain join would have
-- hashed against every running run); their runs locked, skipping runs another transaction
-- holds (a report in flight: the next pass sees what it left).
WITH expired AS (
    (SELECT run_id, nominal_time FROM runs
     WHERE partition = ANY($1::integer[]) AND duetime_attempt_open(state, attempt_end_time)
       AND attempt_lease_expire_time <= (SELECT duetime_now())
     ORDER BY attempt_lease_expire_time
     LIMIT $2)
    UNION
    (SELECT run_id, nominal_time FROM runs
     WHERE partition = ANY($1::integer[]) AND duetime_attempt_open(state, attempt_end_time)
       AND attempt_deadline <= (SELECT duetime_now())
     ORDER BY attempt_deadline
     LIMIT $2)
)
SELECT r.*, v.spec AS job_snapshot, v.spec->'target'->>'kind' AS target_kind,
       v.spec->>'overlap' AS job_overlap,
       r.attempt AS open_number,
       r.attempt_lease_expire_time AS open_lease_expire_time,
       r.attempt_deadline AS open_deadline
FROM expired e
JOIN runs r ON r.run_id = e.run_id AND r.nominal_time = e.nominal_time
JOIN job_versions v ON v.job_id = r.job_id AND v.version = r.job_version
WHERE duetime_attempt_open(r.state, r.attempt_end_time)
  AND r.run_id = ANY(ARRAY(SELECT run_id FROM expired))
ORDER BY least(r.attempt_lease_expire_time, r.attempt_deadline)
LIMIT $2
FOR UPDATE OF r SKIP LOCKED;

-- name: reaper_jobs_lock
-- In job_id order, so two transactions that lock several jobs cannot deadlock; each job's
-- advisory lock first, in the same order, as job_get_for_update takes it.
WITH held AS MATERIALIZED (
    SELECT count(pg_advisory_xact_lock(duetime_job_lock_key(k.job_id))) AS n
    FROM (SELECT DISTINCT job_id FROM unnest($1::uuid[]) AS u(job_id) ORDER BY job_id) k
)
SELECT j.job_id, j.state FROM jobs j, held
WHERE j.job_id = ANY($1::uuid[])
ORDER BY j.job_id
FOR UPDATE OF j;

-- name: reaper_attempt_lock
-- Re-read at the row under its lock: a heartbeat that renewed the lease since the scan wins.
-- duetime_never_called: started ahead of its time, and no beat of its worker answered within
-- its call's window (its worker calls only after such a beat). held_until: how long its
-- worker process's record holds it (duetime_early_hold; NULL: it does not).
SELECT r.attempt_lease_expire_time AS lease_expire_time, r.attempt_deadline AS deadline,
       r.attempt_cancel_reason AS cancel_reason, r.attempt_call_progress AS call_progress,
       (SELECT duetime_now()) AS now,
       duetime_never_called(r.attempt_early, r.attempt_start_time, r.attempt_call_progress,
                            r.attempt_beat_time, r.attempt_worker_id) AS never_called,
       duetime_early_hold(r.attempt_early, r.attempt_start_time, w.beat_time, w.lease)
           AS held_until
FROM runs r
LEFT JOIN worker_incarnation_beats w
       ON w.worker_id = r.attempt_worker_id
      AND w.incarnation = duetime_incarnation(r.start_delivery_id)
WHERE r.run_id = $1 AND r.nominal_time = $2 AND r.attempt = $3
  AND duetime_attempt_open(r.state, r.attempt_end_time)
FOR UPDATE OF r;

-- name: attempt_hold
-- An early attempt its process's record holds past its row's lease: the hold written into the
-- row, so the reaper's scan by lease no longer finds it (a call still going after its short
-- lease from the call time; its worker's beats renew it from then on).
UPDATE runs SET attempt_lease_expire_time = $4
WHERE run_id = $1 AND nominal_time = $2 AND attempt = $3
  AND duetime_attempt_open(state, attempt_end_time) AND attempt_lease_expire_time < $4;
