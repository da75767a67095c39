-- Duetime schema, version 7: runs are found by run id through their primary key.
--
-- runs_run_id_idx (run_id) repeated the leading column of runs_pkey (run_id, nominal_time),
-- which serves the same lookups (the start and report batches' probes by run id); every run
-- inserted and every change of its state wrote an entry to both. Dropping an index builds
-- nothing, so the migration holds its lock only for a moment. Expand only: older builds'
-- statements find their runs through the primary key alike.

DROP INDEX runs_run_id_idx;
