-- Duetime schema, version 6: the reaper finds expired attempts by time alone.
--
-- Its scans named the owned partitions first (partition, lease_expire_time): with 1,024
-- partitions in the array, every pass descended each index 1,024 times per table partition,
-- whether anything had expired or not (most of the idle system's database time, and a
-- steady cost under a herd's thousands of open attempts). By time first, a pass reads only
-- the expired attempts and filters them by partition. Expand only: older code's statements
-- use the new indexes as well.

CREATE INDEX attempts_open_lease_time_idx ON attempts (lease_expire_time)
    WHERE end_time IS NULL;
CREATE INDEX attempts_open_deadline_time_idx ON attempts (deadline)
    WHERE end_time IS NULL;
DROP INDEX attempts_open_lease_idx;
DROP INDEX attempts_open_deadline_idx;
