-- Duetime schema, version 26: the pre-call beat of an early attempt holds it through its
-- worker process's beat record, with no write to the attempt.
--
-- An attempt started ahead of its time holds a short lease from its call time (10 s), so that a
-- worker gone before its call gives the run back soon. Its pre-call beat used to renew each such
-- attempt for a whole lease: a row write per run at a steady rate, and up to 15,000 per beat in
-- a herd. The beat now writes only its worker process's record here, once per window, and the
-- answer grants each early attempt of that process whose window the record covers a lease
-- counted from the record (``duetime_early_hold``), which the reaper honours: an attempt found
-- past its row's lease but held so is given that lease in its row instead of being closed.
--
-- A record is per process (its incarnation, the suffix of its starts' delivery ids), not per
-- worker id: a worker restarted under the same id must not hold its predecessor's attempts, and
-- two processes under one id must not take each other's hold away. The proof that an early
-- attempt's call may have begun (``duetime_never_called``) still counts a beat of any process
-- of the worker id, in either table, so it errs the safe way as before, and an older
-- scheduler's records (worker_beats) still count during a rolling upgrade.

CREATE TABLE worker_incarnation_beats (
    worker_id    text NOT NULL,
    incarnation  text NOT NULL,
    -- The last answered beat of the process that listed an early attempt within its window.
    beat_time    timestamptz NOT NULL,
    -- The longest lease a beat that wrote it granted (schedulers may be set differently): the
    -- hold it gives only grows, so the reaper never ends one before a worker was told.
    lease        interval NOT NULL,
    PRIMARY KEY (worker_id, incarnation)
);

-- The process that started an attempt, from its delivery id (``delivery@incarnation``); NULL
-- for a start that names none (an older worker's, or a test's).
CREATE FUNCTION duetime_incarnation(delivery_id text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN strpos(delivery_id, '@') > 0 THEN split_part(delivery_id, '@', -1) END
$$;

-- Until when an early attempt is held by its process's record (``beat``, ``lease``): a lease
-- counted from the record, never from later than the call time, so an attempt whose cancel its
-- worker never acknowledges is held at most one lease past its call. NULL when the record does
-- not cover the attempt's window (no beat of that process since the window opened).
CREATE FUNCTION duetime_early_hold(
    early boolean, start_time timestamptz, beat timestamptz, lease interval
) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN early AND beat >= duetime_pre_call_from(start_time)
                THEN least(beat, start_time) + lease END
$$;

CREATE OR REPLACE FUNCTION duetime_never_called(
    early boolean, start_time timestamptz, call_progress text, beat_time timestamptz,
    worker text
) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT early
       AND call_progress IS DISTINCT FROM 'BEGUN'
       AND (beat_time IS NULL OR beat_time < duetime_pre_call_from(start_time))
       AND NOT EXISTS (
           SELECT 1 FROM worker_beats w
           WHERE w.worker_id = worker AND w.beat_time >= duetime_pre_call_from(start_time))
       AND NOT EXISTS (
           SELECT 1 FROM worker_incarnation_beats w
           WHERE w.worker_id = worker AND w.beat_time >= duetime_pre_call_from(start_time))
$$;
