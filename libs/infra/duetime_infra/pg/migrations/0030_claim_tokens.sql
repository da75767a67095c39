-- Duetime schema, version 30: a run's claim proof as one id into the tokens' history.
--
-- A claimed run kept its proof of ownership in its row: the scheduler's id (a text), the
-- partition token's epoch and revision, 28 B of every run for a value that changes only when
-- a partition changes hands. claim_tokens now records each token once, as a new owner raises
-- it (with its holder), and a run claimed under it keeps its token_id: 8 B. The three old
-- columns become NULL (no bytes) for runs claimed from now on; run_claims reads either form.
--
-- A token is pruned once no kept run can have been claimed under it: runs claimed under a
-- token are made before its successor is raised (fencing refuses the older owner's claims from
-- then on), so a token whose successor came before every kept run's making is not needed.
-- Expand only: an older build still writes the three columns and reads them. Its archive of a
-- week holding runs claimed by this build would fail and keep the week (nothing is dropped
-- unarchived); weeks are archived only past hot retention, after any rolling deploy is over.

CREATE TABLE claim_tokens (
    token_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    partition   integer NOT NULL,
    epoch       bigint NOT NULL,
    revision    bigint NOT NULL,
    -- The scheduler that raised the token and claimed under it.
    holder      text NOT NULL,
    raise_time  timestamptz NOT NULL DEFAULT duetime_now(),
    UNIQUE (partition, epoch, revision)
);

ALTER TABLE runs
    ADD COLUMN claim_token_id bigint,
    ALTER COLUMN claimed_by DROP NOT NULL,
    ALTER COLUMN claimed_by DROP DEFAULT,
    ALTER COLUMN claim_epoch DROP NOT NULL,
    ALTER COLUMN claim_epoch DROP DEFAULT,
    ALTER COLUMN claim_revision DROP NOT NULL,
    ALTER COLUMN claim_revision DROP DEFAULT;

-- Who claimed each run and under which token, whichever form its row holds ('' and 0 for a
-- run no scheduler claimed: a trigger, a backfill).
CREATE VIEW run_claims AS
SELECT r.run_id, r.nominal_time, r.partition, r.create_time, r.claim_token_id,
       coalesce(r.claimed_by, t.holder, '') AS claimed_by,
       coalesce(r.claim_epoch, t.epoch, 0) AS claim_epoch,
       coalesce(r.claim_revision, t.revision, 0) AS claim_revision
FROM runs r LEFT JOIN claim_tokens t ON t.token_id = r.claim_token_id;

-- The tokens no kept run can refer to: each one whose partition had a later token raised
-- before the oldest making a kept run can have. A week's runs are made at most the claim
-- horizon (10 minutes at most) before the week begins; the default partition's by its rows.
CREATE FUNCTION duetime_prune_claim_tokens() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    oldest timestamptz;
    pruned integer;
BEGIN
    SELECT min(substring(pg_get_expr(c.relpartbound, c.oid)
                         FROM 'FROM \(''([^'']+)''\)')::timestamptz) - interval '1 day'
        INTO oldest
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'runs'::regclass AND c.relname <> 'runs_default';
    oldest := least(oldest, (SELECT min(create_time) FROM runs_default), duetime_now());
    DELETE FROM claim_tokens t
    WHERE EXISTS (SELECT 1 FROM claim_tokens n
                  WHERE n.partition = t.partition AND n.token_id > t.token_id
                    AND n.raise_time < oldest);
    GET DIAGNOSTICS pruned = ROW_COUNT;
    RETURN pruned;
END
$$;
