-- Team quotas where they are decided: their limits in force (the team's own, else the
-- platform's default) and their usage, kept exact by migration 4's triggers.

-- name: quota_lock_teams
-- The teams' quota and usage, their usage rows locked in team order (the order every
-- statement that changes usage takes them in, so none deadlocks against another). The runs
-- that finished are read without a lock: one finishing meanwhile is counted in flight still,
-- which admits less, never more.
SELECT u.team_id, u.stored_jobs, u.dispatched - f.finished AS in_flight, u.held, u.rate_tat,
       u.rate_ahead_from, u.rate_gap_tat, u.rate_ahead_at, u.rate_ahead_n,
       coalesce(t.max_stored_jobs, d.max_stored_jobs) AS max_stored_jobs,
       coalesce(t.runs_per_minute, d.runs_per_minute) AS runs_per_minute,
       coalesce(t.rate_burst, d.rate_burst) AS rate_burst,
       coalesce(t.max_running, d.max_running) AS max_running,
       coalesce(t.max_priority, d.max_priority) AS max_priority,
       coalesce(t.weight, d.weight) AS weight
FROM team_usage u
JOIN team_runs_done f ON f.team_id = u.team_id
JOIN teams t ON t.team_id = u.team_id
CROSS JOIN quota_defaults d
WHERE u.team_id = ANY($1::text[])
ORDER BY u.team_id
FOR UPDATE OF u;

-- name: quota_read_team
-- quota_lock_teams for one team, without a lock (a team reading its own quota).
SELECT u.team_id, u.stored_jobs, u.dispatched - f.finished AS in_flight, u.held, u.rate_tat,
       u.rate_ahead_from, u.rate_gap_tat, u.rate_ahead_at, u.rate_ahead_n,
       coalesce(t.max_stored_jobs, d.max_stored_jobs) AS max_stored_jobs,
       coalesce(t.runs_per_minute, d.runs_per_minute) AS runs_per_minute,
       coalesce(t.rate_burst, d.rate_burst) AS rate_burst,
       coalesce(t.max_running, d.max_running) AS max_running,
       coalesce(t.max_priority, d.max_priority) AS max_priority,
       coalesce(t.weight, d.weight) AS weight,
       (SELECT duetime_now()) AS now
FROM team_usage u
JOIN team_runs_done f ON f.team_id = u.team_id
JOIN teams t ON t.team_id = u.team_id
CROSS JOIN quota_defaults d
WHERE u.team_id = $1;

-- name: quota_save_rates
-- The GCRA state of teams whose rate limit admitted runs (their rows already locked): the
-- TAT of every charge, that of those before the charges ahead, and those (each team's times
-- and counts as array literals, one text a team: unnest takes no array of arrays). The
-- chain an older build may have left is closed: this state covers it.
UPDATE team_usage u
SET rate_tat = s.rate_tat, rate_gap_tat = s.rate_gap_tat, rate_ahead_from = NULL,
    rate_ahead_at = s.ahead_at::timestamptz[], rate_ahead_n = s.ahead_n::integer[]
FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[], $4::text[], $5::text[])
    AS s(team_id, rate_tat, rate_gap_tat, ahead_at, ahead_n)
WHERE u.team_id = s.team_id;

-- name: quota_teams_holding
-- Teams with held runs somewhere (a small scan: one row per team).
SELECT team_id FROM team_usage WHERE held > 0 ORDER BY team_id;

-- name: admission_queued_count
-- The runs of the partitions $1 that are QUEUED (dispatched, not started) and due by $3 (now
-- and the claim's base look-ahead): the backlog a run dispatched now waits behind. Runs
-- claimed further ahead for a herd are not counted until then: workers hold those without a
-- slot (and start them ahead). Counted up to $2, a walk of runs_queued_idx up to $3.
SELECT count(*) FROM (
    SELECT 1 FROM runs
    WHERE state = 'QUEUED' AND effective_time <= $3::timestamptz
      AND partition = ANY($1::integer[])
    LIMIT $2
) queued;

-- name: dispatch_held_runs
-- The held runs (WAITING for their team's quota or their turn) of the partitions $3 due by
-- $4, per team ($1) at most $2 of them, oldest first, locked with SKIP LOCKED (a run another
-- transaction holds waits for the next pass), through runs_held_idx; with what the release
-- needs: the definition's text (misfire settings), target kind and overlap policy.
SELECT r.*, NULL::text AS open_worker_id, v.spec::text AS spec_text,
       v.spec->'target'->>'kind' AS target_kind, v.spec->>'overlap' AS job_overlap
FROM unnest($1::text[], $2::integer[]) AS t(team_id, lim)
CROSS JOIN LATERAL (
    SELECT * FROM runs h
    WHERE h.team_id = t.team_id AND h.state = 'WAITING' AND h.reason IN ('QUOTA', 'FAIR_SHARE')
      AND h.partition = ANY($3::integer[]) AND h.effective_time <= $4
    ORDER BY h.effective_time
    LIMIT t.lim
    FOR UPDATE SKIP LOCKED
) r
JOIN job_versions v ON v.job_id = r.job_id AND v.version = r.job_version;

-- name: dispatch_latest_scheduled
-- For each job $1, the nominal time of its latest scheduled run that runs or ran (RUN_ONCE:
-- a late run is then not "the latest"), walking the run key's index from the newest.
SELECT j.job_id,
       (SELECT r.nominal_time FROM runs r
        WHERE r.job_id = j.job_id AND r.origin = 'SCHEDULE'
          AND r.state IN ('QUEUED', 'WAITING', 'RUNNING', 'RETRY_WAIT', 'SUCCEEDED')
        ORDER BY r.nominal_time DESC LIMIT 1) AS latest
FROM unnest($1::uuid[]) AS j(job_id);

-- name: dispatch_missed
-- Held runs past their misfire threshold that their policy does not run.
UPDATE runs r
SET state = 'MISSED', reason = 'MISFIRE', reason_detail = u.detail,
    update_time = (SELECT duetime_now())
FROM unnest($1::uuid[], $2::timestamptz[], $3::text[]) AS u(run_id, nominal_time, detail)
WHERE r.run_id = u.run_id AND r.nominal_time = u.nominal_time;
