-- Duetime schema, version 10: a run started ahead reads as QUEUED until its call begins.
--
-- A run whose attempt a worker opened ahead of its time is RUNNING in the store (its lease,
-- overlap and fencing rules are those of a running attempt) before its call has begun; the
-- API showed it RUNNING for up to the look-ahead before its time. duetime_shown_state is the
-- one rule for readers: such a run is QUEUED until the attempt's start (its call time).
-- Expand only: a function no older build calls.

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
