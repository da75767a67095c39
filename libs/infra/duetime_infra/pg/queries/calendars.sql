-- A team's calendars (duetime_infra.pg.teams.calendars): JobService's calendar calls, the
-- check that a job's calendars exist, and the claim's one read per batch.

-- name: calendar_insert
-- Nothing when the team has one of that id, or $4 calendars already.
INSERT INTO calendars (team_id, calendar_id, rules)
SELECT $1, $2, $3::jsonb
WHERE (SELECT count(*) FROM calendars WHERE team_id = $1) < $4
ON CONFLICT (team_id, calendar_id) DO NOTHING
RETURNING team_id, calendar_id, rules, version, create_time, update_time;

-- name: calendar_get
SELECT team_id, calendar_id, rules, version, create_time, update_time
FROM calendars WHERE team_id = $1 AND calendar_id = $2;

-- name: calendar_list
SELECT team_id, calendar_id, rules, version, create_time, update_time
FROM calendars WHERE team_id = $1 ORDER BY calendar_id;

-- name: calendar_get_for_update
SELECT team_id, calendar_id, rules, version, create_time, update_time
FROM calendars WHERE team_id = $1 AND calendar_id = $2 FOR UPDATE;

-- name: calendar_write
UPDATE calendars
SET rules = $3::jsonb, version = version + 1, update_time = (SELECT duetime_now())
WHERE team_id = $1 AND calendar_id = $2
RETURNING team_id, calendar_id, rules, version, create_time, update_time;

-- name: calendar_delete
DELETE FROM calendars WHERE team_id = $1 AND calendar_id = $2;

-- name: calendar_jobs
-- The team's jobs, not deleted, whose spec names the calendar $2 (oldest first, at most $3):
-- a walk of the team's jobs through jobs_team_list_idx.
SELECT job_id FROM jobs
WHERE team_id = $1 AND state <> 'DELETED' AND spec -> 'excluded_calendars' ? $2
ORDER BY create_time, job_id
LIMIT $3;

-- name: calendars_named_share
-- Which of the calendars $2 of the team exist, each row locked against a concurrent delete
-- until the job that names them is written (KEY SHARE: updates of the rules do not wait).
SELECT calendar_id FROM calendars
WHERE team_id = $1 AND calendar_id = ANY($2::text[])
FOR KEY SHARE;

-- name: claim_calendars
-- The calendars of a claim batch's jobs, by (team, id) pairs: one read per batch, by key.
SELECT c.team_id, c.calendar_id, c.rules
FROM unnest($1::text[], $2::text[]) AS u(team_id, calendar_id)
JOIN calendars c ON c.team_id = u.team_id AND c.calendar_id = u.calendar_id;
