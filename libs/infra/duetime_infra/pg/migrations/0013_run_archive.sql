-- Duetime schema, version 13: run history archived to object storage before it is dropped.
--
-- With an archive configured (docs/archive.md), the archiver writes each week of runs and
-- attempts past the hot retention as Parquet, verifies it and drops the week's partitions in
-- the transaction that records the week here; readers then find the week's runs in the
-- archive. Its pass records the policy below, and from then on partition maintenance drops no
-- history itself, whatever a scheduler's own settings say: nothing is dropped unarchived.
-- Expand only: new tables and functions; maintenance keeps its signature.

-- Present while an archive is configured (written by every archiver pass); deleting the row
-- turns retention back to dropping history at 30 days.
CREATE TABLE archive_policy (
    singleton      boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    hot_retention  interval NOT NULL,
    update_time    timestamptz NOT NULL DEFAULT duetime_now()
);

-- A week the archiver has begun (watched) or finished (archive_time set, partitions dropped).
CREATE TABLE archive_weeks (
    week_start      timestamptz PRIMARY KEY,
    week_end        timestamptz NOT NULL,
    -- Rows written to the week's partitions since the archiver began watching them
    -- (duetime_archive_watch): an export is dropped only if none were written after it.
    changes         bigint NOT NULL DEFAULT 0,
    archive_time    timestamptz,
    -- The Parquet object and its manifest, relative to the archive's prefix, and what the
    -- manifest says of them.
    object_key      text NOT NULL DEFAULT '',
    manifest_key    text NOT NULL DEFAULT '',
    runs            bigint NOT NULL DEFAULT 0,
    attempts        bigint NOT NULL DEFAULT 0,
    sha256          text NOT NULL DEFAULT '',
    schema_version  integer NOT NULL DEFAULT 0
);

-- A row trigger the archiver puts on a week's runs and attempts partitions before exporting
-- them (TG_ARGV[0]: the week's start): every write to the week counts as a change. Only weeks
-- past the hot retention carry it, so the writes of live runs never fire it.
CREATE FUNCTION duetime_archive_watch() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE archive_weeks SET changes = changes + 1 WHERE week_start = TG_ARGV[0]::timestamptz;
    RETURN NULL;
END
$$;

-- As in version 1, except that with an archive configured (archive_policy) no history is
-- dropped here: the archiver drops the weeks it archived, and the default partition's runs
-- stay.
CREATE OR REPLACE FUNCTION duetime_maintain_partitions(
    retention interval DEFAULT interval '30 days',
    weeks_ahead integer DEFAULT 4
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    base text;
    week_start timestamptz;
    lo timestamptz;
    hi timestamptz;
    part text;
    child record;
    in_flight boolean;
    has_rows boolean;
    cutoff timestamptz := duetime_now() - retention;
    archived boolean := EXISTS (SELECT 1 FROM archive_policy);
BEGIN
    FOREACH base IN ARRAY ARRAY['runs', 'attempts'] LOOP
        week_start := date_trunc('week', cutoff AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
        WHILE week_start < duetime_now() + make_interval(weeks => weeks_ahead) LOOP
            lo := week_start;
            hi := week_start + interval '7 days';
            part := format('%s_%s', base, to_char(lo AT TIME ZONE 'UTC', 'YYYYMMDD'));
            IF to_regclass(part) IS NULL AND hi > cutoff
               AND NOT EXISTS (SELECT 1 FROM archive_weeks w
                               WHERE w.week_start = lo AND w.archive_time IS NOT NULL) THEN
                EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE nominal_time >= $1 AND '
                               'nominal_time < $2)', base || '_default')
                    INTO has_rows USING lo, hi;
                IF has_rows THEN
                    -- Rows will move: readers must wait on the parent and plan again after
                    -- the commit, or they would look for them where they no longer are.
                    EXECUTE format('LOCK TABLE %I IN ACCESS EXCLUSIVE MODE', base);
                END IF;
                EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                               part, base);
                EXECUTE format('WITH moved AS (DELETE FROM %I WHERE nominal_time >= $1 AND '
                               'nominal_time < $2 RETURNING *) INSERT INTO %I SELECT * FROM moved',
                               base || '_default', part) USING lo, hi;
                EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                               base, part, lo, hi);
            END IF;
            week_start := hi;
        END LOOP;
    END LOOP;
    IF NOT archived THEN
        FOR child IN
            SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
            FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'runs'::regclass AND c.relname <> 'runs_default'
        LOOP
            hi := substring(child.bound FROM 'TO \(''([^'']+)''\)')::timestamptz;
            CONTINUE WHEN hi > cutoff;
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE state IN '
                           '(''QUEUED'', ''WAITING'', ''RUNNING'', ''RETRY_WAIT''))', child.relname)
                INTO in_flight;
            CONTINUE WHEN in_flight;
            EXECUTE format('DROP TABLE %I', child.relname);
            EXECUTE format('DROP TABLE IF EXISTS %I', 'attempts_' || substring(child.relname FROM 6));
        END LOOP;
        WITH retired AS (
            DELETE FROM runs_default
            WHERE state IN ('SUCCEEDED', 'DEAD_LETTERED', 'MISSED', 'SKIPPED', 'CANCELLED')
              AND update_time < cutoff
            RETURNING run_id, nominal_time
        )
        DELETE FROM attempts a USING retired r
        WHERE a.run_id = r.run_id AND a.nominal_time = r.nominal_time;
    END IF;
    DELETE FROM request_ids WHERE create_time < duetime_now() - interval '24 hours';
END
$$;
