-- Duetime schema, version 16: the job's lock for starts and reports, apart from claims.
--
-- Starts and reports decide overlap, pause and a WAITING run's release under their job's
-- lock. It was the job row's FOR UPDATE lock, which a claim also holds while it advances the
-- job's schedule: at a steady rate a run's start falls in the same second as the claim of its
-- job's next occurrence, and waited for it. Now it is two locks: the job's transaction-level
-- advisory lock, keyed by this function, orders starts and reports of one job among
-- themselves; the row's FOR KEY SHARE lock orders them with the API's and the reaper's changes
-- (FOR UPDATE) but not with a claim (FOR NO KEY UPDATE), whose new runs hold nothing yet.
-- Expand only: an older build's FOR UPDATE conflicts with both, so mixed builds stay ordered.

CREATE FUNCTION duetime_job_lock_key(job uuid) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT hashtextextended('duetime-job/' || job::text, 0)
$$;
