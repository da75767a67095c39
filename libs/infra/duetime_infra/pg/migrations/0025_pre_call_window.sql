-- Duetime schema, version 25: an early attempt's pre-call window opens 4 s before its call time,
-- not 2 s.
--
-- A worker calls an attempt started ahead only once a beat sent shortly before the call time has
-- been answered (a job paused meanwhile cancels it then), and that beat renews the attempts'
-- short early leases. A herd of 30,000 attempts held its calls for that answer until after its
-- instant; the worker now sends the beat 2.5 s ahead, which needs the window that makes its
-- worker's record the reaper's proof (migration 14) to open before it. Wider errs the safe way:
-- a beat of the worker from 4 s before the call on counts as "its call may have begun".
-- Workers of this build need it (MIN_SUPPORTED_VERSION): their beat would fall before a 2 s
-- window.

CREATE OR REPLACE FUNCTION duetime_pre_call_from(start_time timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT start_time - interval '4 seconds'
$$;
