-- The outbox relay: draining the outbox into Kafka, and re-enqueueing runs whose message was lost.

-- name: relay_lock_batch
-- The oldest pending rows that no other relay holds. Each row is published by the relay that
-- holds its lock, so relays side by side never publish the same row in the normal case; the
-- lock lasts until the relay deletes the acknowledged rows and commits (or rolls back). Rows
-- for the topics in $2 (ones the broker did not know a moment ago) are left for later, so a
-- missing topic holds back its own rows only.
SELECT id, topic, message_key, payload, headers
FROM outbox
WHERE topic <> ALL($2::text[])
ORDER BY id
LIMIT $1
FOR UPDATE SKIP LOCKED;

-- name: relay_delete_rows
-- The rows of this transaction's batch that the broker acknowledged.
DELETE FROM outbox WHERE id = ANY($1::bigint[]);

-- name: relay_outbox_oldest
-- When the oldest pending row for the topics $1 was written (no row when there is none): a
-- walk from the head of the primary key, which stops at the first such row.
SELECT create_time, (SELECT duetime_now()) AS now FROM outbox
WHERE topic = ANY($1::text[])
ORDER BY id
LIMIT 1;

-- name: relay_reenqueue_stuck
-- QUEUED runs whose not-before time, greatest(effective_time, next_attempt_time), is more than
-- $1 in the past, that nothing changed (or re-enqueued) for $1, and that have no dispatch row
-- pending in the outbox: their message was lost after it was published. The range scan is
-- bounded by runs_queued_idx (effective_time, QUEUED runs only). Locked with SKIP LOCKED, so
-- a run another transaction holds (a start in progress, another relay's reconciler) is left
-- alone, and after the lock PostgreSQL re-checks state and update_time on the row's newest
-- version: a run started or re-enqueued meanwhile drops out. update_time is touched, so the
-- next pass waits at least another $1 before it may re-enqueue the same run.
--
UPDATE runs r
SET update_time = (SELECT duetime_now())
FROM (
    SELECT q.run_id, q.nominal_time
    FROM runs q
    WHERE q.state = 'QUEUED'
      AND q.effective_time < (SELECT duetime_now()) - $1::interval
      AND greatest(q.effective_time, q.next_attempt_time) < (SELECT duetime_now()) - $1::interval
      -- Untouched for $1, or for as long as the run had already waited when it was last
      -- re-enqueued (capped at $4): the spacing doubles while a run stays stuck, so a fleet of
      -- workers down for an hour costs a few duplicates per run, not one a minute.
      AND q.update_time < (SELECT duetime_now()) - greatest($1::interval, least($4::interval,
              q.update_time - greatest(q.effective_time, q.next_attempt_time)))
      AND NOT EXISTS (
          SELECT 1 FROM outbox o WHERE o.run_id = q.run_id AND o.topic = ANY($3::text[])
      )
    ORDER BY q.effective_time
    LIMIT $2
    FOR UPDATE SKIP LOCKED
) stuck
WHERE r.run_id = stuck.run_id AND r.nominal_time = stuck.nominal_time
RETURNING r.run_id, r.job_id, r.nominal_time, r.origin, r.team_id, r.effective_time,
          r.priority, r.traceparent, r.trace_context, (SELECT duetime_now()) AS now,
          (SELECT v.spec->'target'->>'kind' FROM job_versions v
           WHERE v.job_id = r.job_id AND v.version = r.job_version) AS target_kind,
          (SELECT v.spec->>'overlap' FROM job_versions v
           WHERE v.job_id = r.job_id AND v.version = r.job_version) AS job_overlap;

-- name: relay_outbox_stats
-- The outbox's depth and the age of its oldest row, for metrics, cheap at any size: rows are
-- counted up to $1 and beyond that estimated by the span of their ids (an upper bound: ids are
-- never reused, and gaps come only from rolled-back inserts and rows deleted out of order); the
-- oldest row is the head of the primary key. No row: counted 0, span and oldest NULL.
SELECT (SELECT count(*) FROM (SELECT 1 FROM outbox LIMIT $1) capped) AS counted,
       (SELECT max(id) - min(id) + 1 FROM outbox) AS id_span,
       (SELECT create_time FROM outbox ORDER BY id LIMIT 1) AS oldest,
       (SELECT duetime_now()) AS now;
