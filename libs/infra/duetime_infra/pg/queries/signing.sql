-- Teams' signing keys (duetime_infra.pg.teams.signing_keys): what AdminService changes, the
-- JWKS the API serves and the keys the schedulers hand to workers.

-- name: signing_team_lock
-- The team's row, locked: adding keys is serialised per team, so it never holds three.
SELECT team_id FROM teams WHERE team_id = $1 FOR UPDATE;

-- name: signing_team_share
-- The team's row, share-locked: a job that asks for signing is stored only while the team
-- holds a key (signing_team_lock, which retiring the last one takes, waits for it).
SELECT team_id FROM teams WHERE team_id = $1 FOR SHARE;

-- name: signing_active_count
SELECT count(*) FROM team_signing_keys WHERE team_id = $1 AND retire_time IS NULL;

-- name: signing_retire_blockers
-- What still signs a team's calls besides its keys: its default, and whether a job (not
-- deleted) asks for signing itself.
SELECT t.default_call_signing,
       EXISTS (SELECT 1 FROM jobs j
               WHERE j.team_id = t.team_id AND j.state <> 'DELETED'
                 AND coalesce(j.spec->'target'->>'signing', 'OFF') <> 'OFF') AS job_signs
FROM teams t WHERE t.team_id = $1;

-- name: signing_key_insert
INSERT INTO team_signing_keys
    (team_id, key_id, sealed_key_id, webhook_secret, token_key, public_jwk)
VALUES ($1, $2, $3, $4, $5, $6::jsonb)
RETURNING team_id, key_id, create_time, retire_time;

-- name: signing_key_retire
-- Erases the key's secrets; the key as it is (already retired: unchanged).
UPDATE team_signing_keys
SET retire_time = coalesce(retire_time, (SELECT duetime_now())),
    sealed_key_id = NULL, webhook_secret = NULL, token_key = NULL
WHERE team_id = $1 AND key_id = $2
RETURNING team_id, key_id, create_time, retire_time;

-- name: signing_key_delete
-- Revokes the key: its row, secrets and public half, is deleted.
DELETE FROM team_signing_keys WHERE team_id = $1 AND key_id = $2
RETURNING team_id, key_id, create_time, retire_time;

-- name: signing_keys_published
-- The keys whose public half is served: active ones, and those retired less than $2 ago;
-- oldest first.
SELECT team_id, key_id, create_time, retire_time, public_jwk FROM team_signing_keys
WHERE team_id = $1
  AND (retire_time IS NULL OR retire_time > (SELECT duetime_now()) - $2::interval)
ORDER BY create_time, key_id;

-- name: signing_keys_active
-- The active keys, sealed, oldest first, with the team's default (no row: no such team).
SELECT t.default_call_signing, k.key_id, k.sealed_key_id, k.webhook_secret, k.token_key
FROM teams t
LEFT JOIN team_signing_keys k ON k.team_id = t.team_id AND k.retire_time IS NULL
WHERE t.team_id = $1
ORDER BY k.create_time, k.key_id;

-- name: signing_keys_prune
-- Retired keys no token they signed can still be verified by: retired longer ago than $1
-- (their public half is no longer served). Their secrets were erased when they retired.
WITH gone AS (
    DELETE FROM team_signing_keys
    WHERE retire_time < (SELECT duetime_now()) - $1::interval
    RETURNING 1
)
SELECT count(*) FROM gone;

-- name: signing_keys_to_reseal
-- Active keys sealed under another keyring key than $1 (duetime-ops secrets rotate).
SELECT team_id, key_id, sealed_key_id, webhook_secret, token_key FROM team_signing_keys
WHERE sealed_key_id <> $1
ORDER BY team_id, key_id
LIMIT $2;

-- name: signing_key_reseal
-- A compare-and-set on the keyring key: a key retired meanwhile is left as it is.
UPDATE team_signing_keys SET sealed_key_id = $4, webhook_secret = $5, token_key = $6
WHERE team_id = $1 AND key_id = $2 AND sealed_key_id = $3
RETURNING key_id;

-- name: signing_run_holder
-- What entitles a worker to a team's keys through one of its runs (GetSigningKeys): the run's
-- team and state, when it last changed (a DEAD_LETTERED run's dead-lettering) and how long
-- ago, and the worker of its open attempt, if any. Found by run id through runs_pkey, as a
-- start finds it. No row: no such run.
SELECT r.team_id, r.state, r.update_time, (SELECT duetime_now()) - r.update_time AS state_age,
       CASE WHEN duetime_attempt_open(r.state, r.attempt_end_time)
            THEN r.attempt_worker_id END AS open_worker_id
FROM runs r
WHERE r.run_id = $1;
