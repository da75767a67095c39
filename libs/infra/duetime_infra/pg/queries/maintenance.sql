-- name: maintain_partitions
-- Two statements (run without arguments): the DDL may outlive the scheduler session's
-- statement timeout, which is sized for claims.
SET LOCAL statement_timeout = 0;
SELECT duetime_maintain_partitions();

-- name: claim_tokens_prune
-- The partition tokens no kept run was claimed under (duetime_prune_claim_tokens).
SELECT duetime_prune_claim_tokens();

-- name: worker_beats_prune
-- A worker's beat record (and a worker process's) counts only for its open early attempts whose
-- call window opened at or before it: older than every open attempt's window, it proves and
-- holds nothing any more (workers come and go under new names and processes, and their rows
-- with them).
WITH oldest AS (
    SELECT coalesce(
        (SELECT min(duetime_pre_call_from(attempt_start_time)) FROM runs
         WHERE duetime_attempt_open(state, attempt_end_time) AND attempt_early),
        'infinity') AS window_from
), by_worker AS (
    DELETE FROM worker_beats WHERE beat_time < (SELECT window_from FROM oldest)
)
DELETE FROM worker_incarnation_beats WHERE beat_time < (SELECT window_from FROM oldest);
