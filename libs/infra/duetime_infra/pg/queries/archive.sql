-- name: archive_policy_set
-- An archive is configured: from now on partition maintenance drops no history ($1: the hot
-- retention).
INSERT INTO archive_policy (hot_retention) VALUES ($1)
ON CONFLICT (singleton) DO UPDATE
SET hot_retention = EXCLUDED.hot_retention, update_time = (SELECT duetime_now());

-- name: archive_due_weeks
-- The weeks of runs whose range ended at least the hot retention ($1) ago, oldest first, with
-- their partitions' names and, for a week archived before (runs written to it since), its
-- object and what that holds.
SELECT c.relname AS runs_table, 'attempts_' || substring(c.relname FROM 6) AS attempts_table,
       b.lo AS week_start, b.hi AS week_end,
       w.object_key AS archived_key, w.runs AS archived_runs, w.attempts AS archived_attempts
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
CROSS JOIN LATERAL (
    SELECT substring(pg_get_expr(c.relpartbound, c.oid) FROM 'FROM \(''([^'']+)''\)')::timestamptz AS lo,
           substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \(''([^'']+)''\)')::timestamptz AS hi
) b
LEFT JOIN archive_weeks w ON w.week_start = b.lo AND w.archive_time IS NOT NULL
WHERE i.inhparent = 'runs'::regclass AND c.relname <> 'runs_default'
  AND b.hi <= (SELECT duetime_now()) - $1::interval
ORDER BY b.lo;

-- name: archive_default_weeks
-- The weeks (UTC, from Monday, as partitions are cut) past the hot retention ($1) that have
-- runs in the default partition: a backfill or a past-dated one-off written to a week with no
-- partition (archived, or older than every partition). Few rows; one scan of the default.
SELECT DISTINCT date_trunc('week', nominal_time AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS week_start
FROM runs_default
WHERE nominal_time < date_trunc('week', ((SELECT duetime_now()) - $1::interval) AT TIME ZONE 'UTC')
                     AT TIME ZONE 'UTC'
ORDER BY 1;

-- name: archive_week_begin
INSERT INTO archive_weeks (week_start, week_end) VALUES ($1, $2)
ON CONFLICT (week_start) DO NOTHING;

-- name: archive_week_watched
-- Whether a partition ($1) carries the archive's watch trigger.
SELECT EXISTS (SELECT 1 FROM pg_trigger
               WHERE tgrelid = to_regclass($1) AND tgname = 'duetime_archive_watch');

-- name: archive_week_changes
SELECT changes FROM archive_weeks WHERE week_start = $1;

-- name: archive_week_changes_locked
SELECT changes FROM archive_weeks WHERE week_start = $1 FOR UPDATE;

-- name: archive_week_done
UPDATE archive_weeks
SET archive_time = (SELECT duetime_now()), object_key = $2, manifest_key = $3, runs = $4, attempts = $5,
    sha256 = $6, schema_version = $7
WHERE week_start = $1;

-- name: archive_weeks_archived
-- The archived weeks (their partitions dropped), latest first: where readers look.
SELECT week_start, week_end, object_key, schema_version FROM archive_weeks
WHERE archive_time IS NOT NULL
ORDER BY week_start DESC;
