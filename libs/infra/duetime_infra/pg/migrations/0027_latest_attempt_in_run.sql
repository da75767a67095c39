-- Duetime schema, version 27: a run's row holds its latest attempt; the attempts table holds
-- the attempts before it.
--
-- Every run that starts wrote an attempt row and closed it: two row writes, a heap tuple of
-- about 140 bytes and four index entries, beside the run's own start and end, which rewrite the
-- run's row anyway, and most runs have one attempt. The latest attempt's columns now live in
-- the run's row (attempt_*, its number is runs.attempt and its delivery runs.start_delivery_id);
-- a start moves the attempt before it, if any, into the attempts table in the same statement.
-- So a run's attempts are the attempts table's rows of it plus the one in its row, and
-- run_attempts is that union, with the attempts table's columns, for readers.
--
-- A run's open attempt is the one in its row while it has not ended (attempt_end_time NULL), and
-- only a RUNNING run has one: the check below keeps that rule (it replaces the attempts
-- table's unique index of open attempts), and the reaper finds expired ones through the two
-- partial indexes on runs. An attempt ends before its run moves on, within one transaction.

-- A contract migration: older builds read and write open attempts in the attempts table, so
-- none may run beside this schema. Stop the schedulers and the api, migrate, then start the new
-- build (docs/operations.md); workers and relays do not read these tables and roll as usual.
-- compatible-from: 27

ALTER TABLE runs
    ADD COLUMN attempt_worker_id          text,
    ADD COLUMN attempt_start_time         timestamptz,
    ADD COLUMN attempt_lease_expire_time  timestamptz,
    -- start + timeout + grace: closed as TIMED_OUT after this, heartbeats or not.
    ADD COLUMN attempt_deadline           timestamptz,
    ADD COLUMN attempt_end_time           timestamptz,
    ADD COLUMN attempt_outcome            text,
    ADD COLUMN attempt_error              text,
    ADD COLUMN attempt_cancel_reason      text,
    ADD COLUMN attempt_call_progress      text,
    ADD COLUMN attempt_early              boolean,
    ADD COLUMN attempt_beat_time          timestamptz;

UPDATE runs r
SET attempt_worker_id = a.worker_id, attempt_start_time = a.start_time,
    attempt_lease_expire_time = a.lease_expire_time, attempt_deadline = a.deadline,
    attempt_end_time = a.end_time, attempt_outcome = a.outcome, attempt_error = a.error,
    attempt_cancel_reason = a.cancel_reason, attempt_call_progress = a.call_progress,
    attempt_early = a.early, attempt_beat_time = a.beat_time,
    start_delivery_id = CASE WHEN a.end_time IS NULL AND a.delivery_id <> ''
                             THEN a.delivery_id ELSE r.start_delivery_id END
FROM attempts a
WHERE a.run_id = r.run_id AND a.nominal_time = r.nominal_time AND a.number = r.attempt;

DELETE FROM attempts a
USING runs r
WHERE a.run_id = r.run_id AND a.nominal_time = r.nominal_time AND a.number = r.attempt;

ALTER TABLE runs
    ADD CONSTRAINT runs_attempt_outcome_check
        CHECK (attempt_outcome IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'LEASE_EXPIRED',
                                   'CANCELLED', 'HANDED_BACK')),
    ADD CONSTRAINT runs_attempt_call_progress_check
        CHECK (attempt_call_progress IN ('NOT_BEGUN', 'BEGUN', 'ANSWERED')),
    ADD CONSTRAINT runs_attempt_ended_check
        CHECK ((attempt_end_time IS NULL) = (attempt_outcome IS NULL)),
    -- Only a RUNNING run has an open attempt.
    ADD CONSTRAINT runs_attempt_open_check
        CHECK (state = 'RUNNING' OR attempt_start_time IS NULL OR attempt_end_time IS NOT NULL)
        NOT VALID;

-- The attempts table holds only ended attempts now.
DROP INDEX attempts_one_open_idx;
DROP INDEX attempts_open_lease_time_idx;
DROP INDEX attempts_open_deadline_time_idx;
CREATE INDEX runs_open_lease_time_idx ON runs (attempt_lease_expire_time)
    WHERE state = 'RUNNING';
CREATE INDEX runs_open_deadline_time_idx ON runs (attempt_deadline)
    WHERE state = 'RUNNING';

-- Every attempt of every run, as the attempts table's columns: the table's (the ones before
-- each run's latest) and each run's latest, from its row.
CREATE VIEW run_attempts AS
SELECT run_id, nominal_time, number, partition, worker_id, delivery_id, start_time,
       lease_expire_time, deadline, end_time, outcome, error, cancel_reason, early, beat_time,
       call_progress
FROM attempts
UNION ALL
SELECT run_id, nominal_time, attempt, partition, attempt_worker_id,
       coalesce(start_delivery_id, ''), attempt_start_time, attempt_lease_expire_time,
       attempt_deadline, attempt_end_time, attempt_outcome, attempt_error,
       attempt_cancel_reason, attempt_early, attempt_beat_time, attempt_call_progress
FROM runs
WHERE attempt_start_time IS NOT NULL;

CREATE OR REPLACE FUNCTION duetime_shown_state(state text, run uuid, nominal timestamptz)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN state = 'RUNNING' AND EXISTS (
            SELECT 1 FROM runs r
            WHERE r.run_id = run AND r.nominal_time = nominal
              AND r.attempt_early AND r.attempt_start_time > (SELECT duetime_now()))
        THEN 'QUEUED'
        ELSE state
    END
$$;

-- Whether the reaper closed an ended attempt: its lease or its deadline had run out when it
-- ended (a beat for it is then a fencing refusal, not one crossing its worker's own report).
CREATE FUNCTION duetime_reaped(
    outcome text, end_time timestamptz, lease_expire_time timestamptz, deadline timestamptz
) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT outcome IN ('LEASE_EXPIRED', 'TIMED_OUT')
       AND end_time >= least(lease_expire_time, deadline)
$$;

-- When an attempt began, as its report says: an attempt started ahead of its time began when
-- its call did (``call``, the call's reported start), never before the time it was given nor
-- after it ended; any other began when it started.
CREATE FUNCTION duetime_reported_start(
    early boolean, start_time timestamptz, call timestamptz, ended timestamptz
) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN early AND call IS NOT NULL THEN least(greatest(start_time, call), ended)
                ELSE start_time END
$$;
