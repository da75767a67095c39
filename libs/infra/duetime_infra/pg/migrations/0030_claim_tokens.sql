-- Duetime schema, version 30: a run's claim proof as one id into the tokens' history.
--
-- A claimed run kept its proof of ownership in its row: the scheduler's id (a text), the
-- partition token's epoch and revision, 28 B of every run for a value that changes only when
-- a partition changes hands. claim_tokens now records each token once, as a new owner raises
-- it (with its holder), and a run claimed under it keeps its token_id: 8 B. The three old
-- columns are NULL (no bytes) in the runs that hold one; run_claims reads either form.
--
-- A claim stores the id only for a run due at most an hour after its making (claim_insert_runs;
-- a DST gap's record may name an instant a schedule's period ahead and keeps the old form), so
-- a week's runs that hold one were made at most an hour before the week began. A token is
-- pruned once a later token of its partition (fencing raises them in (epoch, revision) order)
-- was raised a day before any kept run was made: the runs claimed under a token are made
-- before its successor is raised, give or take the successor's own transaction.
-- Expand only: an older build still writes the three columns (they keep their defaults, which
-- the api's runs take) and reads them. Its archive of a week holding runs claimed by this build
-- would fail and keep the week (nothing is dropped unarchived) until this build archives it.

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
    ALTER COLUMN claim_epoch DROP NOT NULL,
    ALTER COLUMN claim_revision DROP NOT NULL;

-- Who claimed each run and under which token, whichever form its row holds ('' and 0 for a
-- run no scheduler claimed: a trigger, a backfill).
CREATE VIEW run_claims AS
SELECT r.run_id, r.nominal_time, r.partition, r.create_time, r.claim_token_id,
       coalesce(r.claimed_by, t.holder, '') AS claimed_by,
       coalesce(r.claim_epoch, t.epoch, 0) AS claim_epoch,
       coalesce(r.claim_revision, t.revision, 0) AS claim_revision
FROM runs r LEFT JOIN claim_tokens t ON t.token_id = r.claim_token_id;

-- The tokens no kept run can refer to (see the top). The oldest making a kept run can have:
-- an hour before the oldest week's partition begins, or its making for a run in the default
-- partition; a day's margin before it.
CREATE FUNCTION duetime_prune_claim_tokens() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    oldest timestamptz;
    pruned integer;
BEGIN
    SELECT min(substring(pg_get_expr(c.relpartbound, c.oid)
                         FROM 'FROM \(''([^'']+)''\)')::timestamptz)
        INTO oldest
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'runs'::regclass AND c.relname <> 'runs_default';
    oldest := least(oldest, (SELECT min(create_time) FROM runs_default), duetime_now())
              - interval '1 day';
    DELETE FROM claim_tokens t
    WHERE EXISTS (SELECT 1 FROM claim_tokens n
                  WHERE n.partition = t.partition
                    AND (n.epoch, n.revision) > (t.epoch, t.revision)
                    AND n.raise_time < oldest);
    GET DIAGNOSTICS pruned = ROW_COUNT;
    RETURN pruned;
END
$$;
