-- Duetime schema, version 14: the proof that an early attempt's call never began is one row
-- per worker, not one write per attempt.
--
-- A worker calls an attempt started ahead of its time only once a beat sent at most 1 s before
-- the call time has been answered. An attempt whose lease ran out with no beat of its worker
-- answered from 2 s before its call time on never began its call: the reaper gives it back
-- without spending the run's budget. The beat used to write its time on every attempt it
-- listed, a row write per attempt of a herd in the second before its instant; it now writes
-- its worker's row here. A worker lists every attempt it holds in every beat, so a beat of the
-- worker stands for a beat of the attempt; the rule errs only the safe way (a process restarted
-- under the same worker id makes its predecessor's unbegun attempts count as maybe called).
-- Expand only: attempts.beat_time stays, still written with every lease renewal, and the rule
-- reads both, so an older scheduler's beats count too. During a rolling upgrade an older
-- reaper reads beat_time alone: an at-least-once early attempt whose worker died after its
-- call and before any renewal may then be retried without spending budget.

CREATE TABLE worker_beats (
    worker_id  text PRIMARY KEY,
    -- The last answered beat that listed an early attempt within the window of its call.
    beat_time  timestamptz NOT NULL
);

-- From this instant on, an answered beat of the attempt's worker means its call may have begun.
CREATE FUNCTION duetime_pre_call_from(start_time timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT start_time - interval '2 seconds'
$$;

-- An open attempt known not to have begun its call: started ahead, not announced as begun, and
-- no beat of its worker (nor, from an older build, of itself) answered since its window opened.
CREATE FUNCTION duetime_never_called(
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
$$;
