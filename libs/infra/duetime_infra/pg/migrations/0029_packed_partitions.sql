-- Duetime schema, version 29: a new week's partitions laid out without padding.
--
-- A partition's columns need not lie in its table's order. runs keeps its columns in the order
-- the migrations added them, texts between times, and PostgreSQL pads each time and counter to
-- 8 bytes: 16 B of a run's row. A week's runs and attempts partitions made from now on put
-- their columns by alignment (8-byte times and counters, then 4-byte ones, uuids, booleans,
-- texts last), so that no padding lies between them: 15 B less heap a run (bench/run_bytes).
-- Partitions made before keep their layout until retention or the archive drops them.
-- Readers see no difference; PostgreSQL maps a row between the two layouts as it routes an
-- insert and as the usage triggers collect their transition rows.
-- Expand only: a new function; maintenance keeps its signature.

-- Makes the week [lo, hi) of base ('runs' or 'attempts') its partition ``part``: the columns
-- by alignment with the table's defaults, NOT NULLs and CHECK constraints; the week's rows
-- moved in from the default partition; attached. The caller holds the locks readers need.
CREATE FUNCTION duetime_make_week_partition(base text, part text, lo timestamptz, hi timestamptz)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    packed text;
    names text;
    check_constraint record;
BEGIN
    SELECT string_agg(format('%I %s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                             CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END,
                             coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '')),
                      ', ' ORDER BY t.typlen < 0,
                                    array_position(ARRAY['d', 'i', 's', 'c'], t.typalign::text),
                                    t.typlen DESC, NOT a.attnotnull, a.attnum),
           string_agg(format('%I', a.attname), ', ' ORDER BY a.attnum)
      INTO packed, names
      FROM pg_attribute a
      JOIN pg_type t ON t.oid = a.atttypid
      LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE a.attrelid = base::regclass AND a.attnum > 0 AND NOT a.attisdropped;
    EXECUTE format('CREATE TABLE %I (%s)', part, packed);
    FOR check_constraint IN
        SELECT conname, pg_get_constraintdef(oid) AS definition
          FROM pg_constraint WHERE conrelid = base::regclass AND contype = 'c'
    LOOP
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I %s', part, check_constraint.conname,
                       check_constraint.definition);
    END LOOP;
    EXECUTE format('WITH moved AS (DELETE FROM %I WHERE nominal_time >= $1 AND nominal_time < $2 '
                   'RETURNING %s) INSERT INTO %I (%s) SELECT %s FROM moved',
                   base || '_default', names, part, names, names) USING lo, hi;
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                   base, part, lo, hi);
END
$$;

-- As in schema 13, each week's partitions made by the function above.
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
                PERFORM duetime_make_week_partition(base, part, lo, hi);
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
