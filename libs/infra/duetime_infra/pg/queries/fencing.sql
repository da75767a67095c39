-- name: fence_held
-- The partitions whose stored token is ours, share-locked until commit, with no row written:
-- a newer owner's raise (fence_partitions) waits for this transaction, and one committed
-- before it leaves the row unmatched (re-read under the lock), so this one fails.
SELECT t.partition
FROM partition_tokens t
JOIN unnest($1::integer[], $2::bigint[], $3::bigint[]) AS u(partition, epoch, revision)
  ON t.partition = u.partition
WHERE t.partition = ANY($1::integer[]) AND (t.epoch, t.revision) = (u.epoch, u.revision)
FOR SHARE OF t;

-- name: fence_partitions
-- Raises each partition's token to ours (a new owner's first fence), row-locked until commit,
-- so two owners' transactions serialise here.
UPDATE partition_tokens t
SET epoch = u.epoch, revision = u.revision, update_time = (SELECT duetime_now())
FROM unnest($1::integer[], $2::bigint[], $3::bigint[]) AS u(partition, epoch, revision)
WHERE t.partition = u.partition AND (t.epoch, t.revision) <= (u.epoch, u.revision)
RETURNING t.partition;

-- name: record_claim_tokens
-- Each token a new owner raises, once, with its holder: the claim proof its runs refer to by
-- id. A token recorded already (raised again by its holder) keeps its row and id.
INSERT INTO claim_tokens (partition, epoch, revision, holder)
SELECT u.partition, u.epoch, u.revision, $4
FROM unnest($1::integer[], $2::bigint[], $3::bigint[]) AS u(partition, epoch, revision)
ON CONFLICT (partition, epoch, revision) DO UPDATE SET holder = claim_tokens.holder
RETURNING partition, token_id;
