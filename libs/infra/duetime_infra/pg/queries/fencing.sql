-- name: fence_partitions
-- Row-locks each partition's token until commit, so two owners' transactions serialise here.
UPDATE partition_tokens t
SET epoch = u.epoch, revision = u.revision, update_time = (SELECT duetime_now())
FROM unnest($1::integer[], $2::bigint[], $3::bigint[]) AS u(partition, epoch, revision)
WHERE t.partition = u.partition AND (t.epoch, t.revision) <= (u.epoch, u.revision)
RETURNING t.partition;
