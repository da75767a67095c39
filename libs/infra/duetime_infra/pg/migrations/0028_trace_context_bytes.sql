-- Duetime schema, version 28: a run's trace context in 25 bytes, not 55 characters; one home
-- for the rule that a run has an open attempt.
--
-- A run kept its W3C traceparent ("00-<trace id>-<parent id>-<flags>") as text, 56 bytes of its
-- row. trace_context holds the 25 bytes it spells (16 of trace id, 8 of parent id, 1 of flags;
-- version 00), 26 stored: a build of this schema writes them and leaves traceparent '' (or the
-- text itself, for any other form), and reads either (duetime_infra.tracecontext.read_trace).
-- An expand migration: a build of version 27 still writes the text, which this build reads,
-- and reads '' for the runs this build made (their calls carry no trace context until it is
-- replaced). A later contract migration drops the text column.
ALTER TABLE runs ADD COLUMN trace_context bytea;

-- A run has an open attempt: its latest, in its row, has not ended, and only a RUNNING run has
-- one (schema 27). A plain SQL expression, so the planner inlines it and a partial index on
-- state = 'RUNNING' still matches a query that uses it.
CREATE FUNCTION duetime_attempt_open(state text, attempt_end_time timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT state = 'RUNNING' AND attempt_end_time IS NULL
$$;
