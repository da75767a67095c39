-- Duetime schema, version 9: a team's finished runs are counted on eight rows, not one.
--
-- Every statement that ends runs (a report batch, the reaper) added them to its team's one
-- team_runs_done row, so the transactions ending one team's runs waited for each other on it
-- (bench/steady at 1,050 runs/s of one team: 2.35 ms of lock wait a run). Now a transaction
-- adds to the part its backend names (duetime_runs_done_part), so two on different
-- connections share a row one time in eight. Expand only: team_runs_done becomes a view of
-- each team's parts summed, typed as the column was, which every build's statements read as
-- before; its INSTEAD OF triggers take older builds' writes, so a statement of one queued
-- behind this migration's lock finds the view when it runs and adds to a part.

ALTER TABLE team_runs_done RENAME TO team_runs_done_parts;
ALTER TABLE team_runs_done_parts
    ADD COLUMN part smallint NOT NULL DEFAULT 0 CHECK (part BETWEEN 0 AND 7);
ALTER TABLE team_runs_done_parts ALTER COLUMN part DROP DEFAULT;
ALTER TABLE team_runs_done_parts DROP CONSTRAINT team_runs_done_pkey;
ALTER TABLE team_runs_done_parts ADD PRIMARY KEY (team_id, part);
INSERT INTO team_runs_done_parts (team_id, part)
SELECT team_id, p FROM teams CROSS JOIN generate_series(0, 7) p ON CONFLICT DO NOTHING;

-- No GROUP BY, so a query that names a few teams sums only theirs.
CREATE VIEW team_runs_done AS
SELECT t.team_id,
       coalesce((SELECT sum(p.finished) FROM team_runs_done_parts p
                 WHERE p.team_id = t.team_id), 0)::bigint AS finished
FROM teams t;

-- The part this session's statements add to: a backend keeps its part, so one transaction's
-- statements take their team's rows in the same order as before (duetime_add_usage's).
CREATE FUNCTION duetime_runs_done_part() RETURNS smallint
LANGUAGE sql STABLE PARALLEL RESTRICTED AS $$ SELECT (pg_backend_pid() % 8)::smallint $$;

-- A team's parts, for a new team (teams' trigger) and for an older build's insert.
CREATE FUNCTION duetime_runs_done_parts(team text) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO team_runs_done_parts (team_id, part)
    SELECT team, p FROM generate_series(0, 7) p ON CONFLICT DO NOTHING
$$;

CREATE OR REPLACE FUNCTION duetime_team_usage_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO team_usage (team_id) VALUES (NEW.team_id) ON CONFLICT DO NOTHING;
    PERFORM duetime_runs_done_parts(NEW.team_id);
    RETURN NULL;
END
$$;

-- Older builds' writes through the view: an insert makes the team's parts, an update adds its
-- change to this session's part.
CREATE FUNCTION duetime_runs_done_view_write() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM duetime_runs_done_parts(NEW.team_id);
    ELSE
        UPDATE team_runs_done_parts SET finished = finished + (NEW.finished - OLD.finished)
        WHERE team_id = OLD.team_id AND part = duetime_runs_done_part();
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER team_runs_done_write INSTEAD OF INSERT OR UPDATE ON team_runs_done
    FOR EACH ROW EXECUTE FUNCTION duetime_runs_done_view_write();

CREATE OR REPLACE FUNCTION duetime_add_usage(deltas jsonb) RETURNS void
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
            UPDATE team_runs_done_parts SET finished = finished - d.flight
            WHERE team_id = d.team_id AND part = duetime_runs_done_part();
        END IF;
    END LOOP;
END
$$;
