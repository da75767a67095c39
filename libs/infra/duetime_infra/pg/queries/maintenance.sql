-- name: maintain_partitions
-- Two statements (run without arguments): the DDL may outlive the scheduler session's
-- statement timeout, which is sized for claims.
SET LOCAL statement_timeout = 0;
SELECT duetime_maintain_partitions();

-- name: worker_beats_prune
-- A worker's beat record counts only for its open early attempts whose call window opened at
-- or before it: older than every open attempt's window, it proves nothing any more (workers
-- come and go under new names, and their rows with them).
DELETE FROM worker_beats
WHERE beat_time < coalesce(
    (SELECT min(duetime_pre_call_from(start_time)) FROM attempts
     WHERE end_time IS NULL AND early),
    'infinity');
