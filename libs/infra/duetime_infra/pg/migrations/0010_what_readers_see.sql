-- Duetime schema, version 10: what a reader is shown is true.
--
-- A run whose attempt a worker opened ahead of its time is RUNNING in the store (its lease,
-- overlap and fencing rules are those of a running attempt) before its call has begun; the
-- API showed it RUNNING for up to the look-ahead before its time. duetime_shown_state is the
-- one rule for readers: such a run is QUEUED until the attempt's start (its call time).
--
-- The rate limit counts a dispatch from its run's effective time; a trigger or a release now
-- that follows a claim of runs due seconds ahead counts from the latest arrival charged
-- (team_usage.rate_time), so the claim's lead is not read as rate spent (duetime_core.quotas).
-- Expand only: older builds neither read nor write the column, and a NULL counts from the
-- arrival itself, as before.

ALTER TABLE team_usage ADD COLUMN rate_time timestamptz;

CREATE FUNCTION duetime_shown_state(state text, run uuid, nominal timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN state = 'RUNNING' AND EXISTS (
            SELECT 1 FROM attempts a
            WHERE a.run_id = run AND a.nominal_time = nominal AND a.end_time IS NULL
              AND a.early AND a.start_time > (SELECT duetime_now()))
        THEN 'QUEUED'
        ELSE state
    END
$$;
