-- Duetime schema, version 12: who changed a job and how, why a job is paused, and the range
-- records of a job found by time.
--
-- Every job_versions row records the call that made it (change), its author (the token the
-- call carried: its id and description), the fields it set anew and a pause's note. Rows made
-- before this version, or by a build that predates it, keep NULLs: unknown. A paused job keeps
-- its pause's note, author and call time until it is resumed.
--
-- ExplainOccurrence finds the range record (MISSED or SKIPPED, standing for many occurrences)
-- that covers an instant through an index that holds only range records, so its cost does not
-- grow with a job's single runs. Built without blocking writes. Expand only.
--
-- build-concurrently: runs_job_ranges_idx ON runs (job_id, nominal_time DESC) WHERE range_end_time IS NOT NULL

ALTER TABLE job_versions
    ADD COLUMN change text CHECK (change IN ('CREATE', 'UPDATE', 'PAUSE', 'RESUME', 'DELETE')),
    ADD COLUMN token_id uuid,
    ADD COLUMN token_description text,
    ADD COLUMN changed_fields text[],
    ADD COLUMN note text;

ALTER TABLE jobs
    ADD COLUMN pause_note text NOT NULL DEFAULT '',
    ADD COLUMN pause_token_id uuid,
    ADD COLUMN pause_token_description text,
    ADD COLUMN pause_request_time timestamptz;
