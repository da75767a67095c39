-- Teams, their quotas and their tokens, as operators (AdminService, the admin command) and
-- every service's authentication read them.

-- name: token_lookup
SELECT role, team_id, token_id, description, worker_id_prefix FROM api_tokens
WHERE token_sha256 = $1 AND revoke_time IS NULL;

-- name: team_insert
-- A new team (its usage row comes from the teams_usage_row trigger); no row if it exists.
INSERT INTO teams (team_id, display_name, notification_url, default_call_signing)
VALUES ($1, $2, $3, $4)
ON CONFLICT (team_id) DO NOTHING
RETURNING team_id;

-- name: team_upsert
-- The admin command's create-team: the team made, or its notification URL changed.
INSERT INTO teams (team_id, notification_url) VALUES ($1, $2)
ON CONFLICT (team_id) DO UPDATE SET notification_url = EXCLUDED.notification_url;

-- name: team_get
-- A team with its own quota columns, the limits in force and its usage.
SELECT t.team_id, t.display_name, t.notification_url, t.create_time, t.default_call_signing,
       t.max_stored_jobs AS own_max_stored_jobs, t.runs_per_minute AS own_runs_per_minute,
       t.rate_burst AS own_rate_burst, t.max_running AS own_max_running,
       t.max_priority AS own_max_priority, t.weight AS own_weight,
       coalesce(t.max_stored_jobs, d.max_stored_jobs) AS max_stored_jobs,
       coalesce(t.runs_per_minute, d.runs_per_minute) AS runs_per_minute,
       coalesce(t.rate_burst, d.rate_burst) AS rate_burst,
       coalesce(t.max_running, d.max_running) AS max_running,
       coalesce(t.max_priority, d.max_priority) AS max_priority,
       coalesce(t.weight, d.weight) AS weight,
       u.stored_jobs, u.dispatched - f.finished AS in_flight, u.held, u.rate_tat,
       u.rate_ahead_from, u.rate_gap_tat, u.rate_ahead_at, u.rate_ahead_n,
       (SELECT duetime_now()) AS now
FROM teams t
CROSS JOIN quota_defaults d
JOIN team_usage u ON u.team_id = t.team_id
JOIN team_runs_done f ON f.team_id = t.team_id
WHERE t.team_id = ANY($1::text[])
ORDER BY t.team_id;

-- name: team_list
SELECT team_id FROM teams WHERE ($1::text IS NULL OR team_id > $1) ORDER BY team_id LIMIT $2;

-- name: team_update
-- $2/$4/$6: whether to set display_name ($3) / notification_url ($5) /
-- default_call_signing ($7).
UPDATE teams
SET display_name = CASE WHEN $2 THEN $3 ELSE display_name END,
    notification_url = CASE WHEN $4 THEN $5 ELSE notification_url END,
    default_call_signing = CASE WHEN $6 THEN $7 ELSE default_call_signing END
WHERE team_id = $1
RETURNING team_id;

-- name: team_quota_update
-- For each limit, whether to change it ($2, $4, ...) and its new value (NULL: the default).
UPDATE teams
SET max_stored_jobs = CASE WHEN $2 THEN $3 ELSE max_stored_jobs END,
    runs_per_minute = CASE WHEN $4 THEN $5 ELSE runs_per_minute END,
    rate_burst = CASE WHEN $6 THEN $7 ELSE rate_burst END,
    max_running = CASE WHEN $8 THEN $9 ELSE max_running END,
    max_priority = CASE WHEN $10 THEN $11 ELSE max_priority END,
    weight = CASE WHEN $12 THEN $13::integer ELSE weight END,
    quota_update_time = (SELECT duetime_now())
WHERE team_id = $1
RETURNING team_id;

-- name: quota_defaults_get
SELECT * FROM quota_defaults;

-- name: quota_defaults_update
-- As team_quota_update, for the platform's defaults (a value is required).
UPDATE quota_defaults
SET max_stored_jobs = CASE WHEN $1 THEN $2 ELSE max_stored_jobs END,
    runs_per_minute = CASE WHEN $3 THEN $4 ELSE runs_per_minute END,
    rate_burst = CASE WHEN $5 THEN $6 ELSE rate_burst END,
    max_running = CASE WHEN $7 THEN $8 ELSE max_running END,
    max_priority = CASE WHEN $9 THEN $10 ELSE max_priority END,
    weight = CASE WHEN $11 THEN $12::integer ELSE weight END,
    update_time = (SELECT duetime_now())
RETURNING *;

-- name: token_insert
INSERT INTO api_tokens (token_sha256, role, team_id, description, worker_id_prefix)
VALUES ($1, $2, $3, $4, $5)
RETURNING token_id, role, team_id, description, create_time, revoke_time, worker_id_prefix;

-- name: token_list
-- Newest first; $3/$4 the last token of the previous page.
SELECT token_id, role, team_id, description, create_time, revoke_time, worker_id_prefix
FROM api_tokens
WHERE ($1::text IS NULL OR team_id = $1)
  AND ($2 OR revoke_time IS NULL)
  AND ($3::timestamptz IS NULL OR (create_time, token_id) < ($3, $4::uuid))
ORDER BY create_time DESC, token_id DESC
LIMIT $5;

-- name: token_revoke
-- Revokes by id; the token as it is (already revoked: unchanged).
UPDATE api_tokens SET revoke_time = coalesce(revoke_time, (SELECT duetime_now()))
WHERE token_id = $1
RETURNING token_id, role, team_id, description, create_time, revoke_time, worker_id_prefix;

-- name: token_revoke_by_secret
UPDATE api_tokens SET revoke_time = coalesce(revoke_time, (SELECT duetime_now()))
WHERE token_sha256 = $1
RETURNING token_id;
