-- Duetime schema, version 4: teams as tenants — quotas, their usage, held runs, operators —
-- and attempts started ahead of their run's time.
--
-- Expand only: new tables, nullable columns or columns with defaults, a wider role check.
-- Builds of version 3 keep working against it (they ignore quotas: their claims queue every
-- run, as before).

-- The platform's quota for any team that was not given its own (one row). 0 means no limit.
CREATE TABLE quota_defaults (
    singleton        boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    -- Jobs in state ACTIVE or PAUSED.
    max_stored_jobs  bigint NOT NULL DEFAULT 100000 CHECK (max_stored_jobs >= 0),
    -- Dispatches (first attempts and retries) per minute, as a GCRA with a burst.
    runs_per_minute  bigint NOT NULL DEFAULT 60000 CHECK (runs_per_minute >= 0),
    rate_burst       bigint NOT NULL DEFAULT 20000 CHECK (rate_burst >= 1),
    -- Runs dispatched and not yet finished (QUEUED or RUNNING) at once.
    max_running      bigint NOT NULL DEFAULT 20000 CHECK (max_running >= 0),
    -- The highest priority a team's jobs may use.
    max_priority     text NOT NULL DEFAULT 'NORMAL' CHECK (max_priority IN ('HIGH', 'NORMAL', 'LOW')),
    -- The team's share of dispatch capacity among teams of the same priority.
    weight           integer NOT NULL DEFAULT 1 CHECK (weight BETWEEN 1 AND 1000),
    update_time      timestamptz NOT NULL DEFAULT duetime_now()
);
INSERT INTO quota_defaults DEFAULT VALUES;

-- A team's own quota: NULL takes the platform default.
ALTER TABLE teams
    ADD COLUMN max_stored_jobs bigint CHECK (max_stored_jobs >= 0),
    ADD COLUMN runs_per_minute bigint CHECK (runs_per_minute >= 0),
    ADD COLUMN rate_burst bigint CHECK (rate_burst >= 1),
    ADD COLUMN max_running bigint CHECK (max_running >= 0),
    ADD COLUMN max_priority text CHECK (max_priority IN ('HIGH', 'NORMAL', 'LOW')),
    ADD COLUMN weight integer CHECK (weight BETWEEN 1 AND 1000),
    ADD COLUMN quota_update_time timestamptz;

-- What a team uses, kept exact by the triggers below (every statement that changes a job's or
-- a run's state adjusts it, whatever code runs it), and the state of its rate limit. Read and
-- locked (FOR UPDATE) wherever a quota is decided, after the job and run rows a transaction
-- locks: that is the lock order. Runs leaving the in-flight states are counted in a table of
-- their own (team_runs_done), so the transactions that end runs (reports, the reaper) never
-- wait for the ones that dispatch them (claims, releases) on one row: a team's runs in flight
-- are team_usage.dispatched - team_runs_done.finished.
CREATE TABLE team_usage (
    team_id      text PRIMARY KEY REFERENCES teams (team_id),
    -- Jobs ACTIVE or PAUSED.
    stored_jobs  bigint NOT NULL DEFAULT 0,
    -- Runs that entered QUEUED or RUNNING, ever.
    dispatched   bigint NOT NULL DEFAULT 0,
    -- Runs WAITING for their team's quota (reason QUOTA) or their turn (FAIR_SHARE).
    held         bigint NOT NULL DEFAULT 0,
    -- GCRA: the theoretical arrival time of the next dispatch.
    rate_tat     timestamptz
);
CREATE TABLE team_runs_done (
    team_id   text PRIMARY KEY REFERENCES teams (team_id),
    -- Runs that left QUEUED or RUNNING, ever.
    finished  bigint NOT NULL DEFAULT 0
);
INSERT INTO team_usage (team_id, stored_jobs)
SELECT t.team_id, (SELECT count(*) FROM jobs j
                   WHERE j.team_id = t.team_id AND j.state IN ('ACTIVE', 'PAUSED'))
FROM teams t;
INSERT INTO team_runs_done (team_id) SELECT team_id FROM teams;
UPDATE team_usage u SET dispatched = c.n
FROM (SELECT team_id, count(*) AS n FROM runs WHERE state IN ('QUEUED', 'RUNNING')
      GROUP BY team_id) c
WHERE u.team_id = c.team_id;

CREATE FUNCTION duetime_team_usage_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO team_usage (team_id) VALUES (NEW.team_id) ON CONFLICT DO NOTHING;
    INSERT INTO team_runs_done (team_id) VALUES (NEW.team_id) ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
CREATE TRIGGER teams_usage_row AFTER INSERT ON teams
    FOR EACH ROW EXECUTE FUNCTION duetime_team_usage_row();

-- Adds per-team deltas to the usage tables, one team at a time in team order, so two
-- statements that touch the same teams lock their rows in the same order. Runs entering the
-- in-flight states, held runs and stored jobs go to team_usage; runs leaving to
-- team_runs_done.
CREATE FUNCTION duetime_add_usage(deltas jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    d record;
BEGIN
    FOR d IN
        SELECT key AS team_id, (value->>0)::bigint AS jobs, (value->>1)::bigint AS flight,
               (value->>2)::bigint AS held
        FROM jsonb_each(deltas) ORDER BY key
    LOOP
        IF d.jobs <> 0 OR d.held <> 0 OR d.flight > 0 THEN
            UPDATE team_usage
            SET stored_jobs = stored_jobs + d.jobs, dispatched = dispatched + greatest(d.flight, 0),
                held = held + d.held
            WHERE team_id = d.team_id;
        END IF;
        IF d.flight < 0 THEN
            UPDATE team_runs_done SET finished = finished - d.flight WHERE team_id = d.team_id;
        END IF;
    END LOOP;
END
$$;

-- What each counter counts: one definition for the triggers.
CREATE FUNCTION duetime_job_stored(state text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT (state IN ('ACTIVE', 'PAUSED'))::integer $$;
CREATE FUNCTION duetime_run_in_flight(state text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT (state IN ('QUEUED', 'RUNNING'))::integer $$;
CREATE FUNCTION duetime_run_held(state text, reason text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (state = 'WAITING' AND reason IN ('QUOTA', 'FAIR_SHARE'))::integer
$$;

-- Statement-level, over the transition tables: one aggregate per statement, not a counter
-- update per row (a claim batch changes hundreds of rows of one team).
CREATE FUNCTION duetime_jobs_usage() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    deltas jsonb;
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT jsonb_object_agg(team_id, jsonb_build_array(n, 0, 0)) INTO deltas
        FROM (SELECT team_id, sum(duetime_job_stored(state)) AS n FROM new_jobs
              GROUP BY team_id) s WHERE n <> 0;
    ELSIF TG_OP = 'UPDATE' THEN
        SELECT jsonb_object_agg(team_id, jsonb_build_array(n, 0, 0)) INTO deltas
        FROM (SELECT team_id, sum(n) AS n FROM (
                  SELECT team_id, duetime_job_stored(state) AS n FROM new_jobs
                  UNION ALL
                  SELECT team_id, -duetime_job_stored(state) FROM old_jobs) c
              GROUP BY team_id) s WHERE n <> 0;
    ELSE
        SELECT jsonb_object_agg(team_id, jsonb_build_array(-n, 0, 0)) INTO deltas
        FROM (SELECT team_id, sum(duetime_job_stored(state)) AS n FROM old_jobs
              GROUP BY team_id) s WHERE n <> 0;
    END IF;
    IF deltas IS NOT NULL THEN
        PERFORM duetime_add_usage(deltas);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER jobs_usage_insert AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION duetime_jobs_usage();
CREATE TRIGGER jobs_usage_update AFTER UPDATE ON jobs
    REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION duetime_jobs_usage();
CREATE TRIGGER jobs_usage_delete AFTER DELETE ON jobs REFERENCING OLD TABLE AS old_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION duetime_jobs_usage();

CREATE FUNCTION duetime_runs_usage() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    deltas jsonb;
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT jsonb_object_agg(team_id, jsonb_build_array(0, f, h)) INTO deltas
        FROM (SELECT team_id, sum(duetime_run_in_flight(state)) AS f,
                     sum(duetime_run_held(state, reason)) AS h
              FROM new_runs GROUP BY team_id) s WHERE f <> 0 OR h <> 0;
    ELSIF TG_OP = 'UPDATE' THEN
        SELECT jsonb_object_agg(team_id, jsonb_build_array(0, f, h)) INTO deltas
        FROM (SELECT team_id, sum(f) AS f, sum(h) AS h FROM (
                  SELECT team_id, duetime_run_in_flight(state) AS f,
                         duetime_run_held(state, reason) AS h FROM new_runs
                  UNION ALL
                  SELECT team_id, -duetime_run_in_flight(state), -duetime_run_held(state, reason)
                  FROM old_runs) c
              GROUP BY team_id) s WHERE f <> 0 OR h <> 0;
    ELSE
        SELECT jsonb_object_agg(team_id, jsonb_build_array(0, -f, -h)) INTO deltas
        FROM (SELECT team_id, sum(duetime_run_in_flight(state)) AS f,
                     sum(duetime_run_held(state, reason)) AS h
              FROM old_runs GROUP BY team_id) s WHERE f <> 0 OR h <> 0;
    END IF;
    IF deltas IS NOT NULL THEN
        PERFORM duetime_add_usage(deltas);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER runs_usage_insert AFTER INSERT ON runs REFERENCING NEW TABLE AS new_runs
    FOR EACH STATEMENT EXECUTE FUNCTION duetime_runs_usage();
CREATE TRIGGER runs_usage_update AFTER UPDATE ON runs
    REFERENCING OLD TABLE AS old_runs NEW TABLE AS new_runs
    FOR EACH STATEMENT EXECUTE FUNCTION duetime_runs_usage();
CREATE TRIGGER runs_usage_delete AFTER DELETE ON runs REFERENCING OLD TABLE AS old_runs
    FOR EACH STATEMENT EXECUTE FUNCTION duetime_runs_usage();

-- A held run: when it became eligible to start (its team's quota let it go; NULL: its
-- effective time), and which of the team's limits held it ('RATE', 'CONCURRENCY'; '' none).
ALTER TABLE runs
    ADD COLUMN eligible_time timestamptz,
    ADD COLUMN quota_limit text NOT NULL DEFAULT '';
-- The held runs of a team in due order: the dispatcher releases them from here.
CREATE INDEX runs_held_idx ON runs (team_id, effective_time)
    WHERE state = 'WAITING' AND reason IN ('QUOTA', 'FAIR_SHARE');

-- Operators (AdminService) hold tokens of their own role; every token gets an id by which it
-- is listed and revoked without its secret.
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_role_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_role_check
    CHECK (role IN ('team', 'worker', 'operator'));
ALTER TABLE api_tokens ADD COLUMN token_id uuid NOT NULL DEFAULT gen_random_uuid();
CREATE UNIQUE INDEX api_tokens_id_idx ON api_tokens (token_id);

-- A run that holds its job for the overlap policy: running, or between its attempts (a retry
-- waiting for its time, queued again, or held back by its team's quota). The one definition
-- of the rule for SQL; duetime_core.attempts.OtherRun.active is the same rule in Python.
CREATE FUNCTION duetime_run_holds_job(state text, attempt integer) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT state IN ('RUNNING', 'RETRY_WAIT') OR (state IN ('QUEUED', 'WAITING') AND attempt > 0)
$$;

-- An attempt started ahead of its run's time, for a worker that holds it and calls at its
-- start_time (the call's reported start replaces it when the attempt ends), and when a
-- heartbeat last renewed it: such a worker calls only after a beat answered at most 1 s before
-- its call time, so one never beaten since then never began its call.
ALTER TABLE attempts
    ADD COLUMN early boolean NOT NULL DEFAULT false,
    ADD COLUMN beat_time timestamptz;
