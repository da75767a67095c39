-- Duetime schema, version 8: runs waiting for a retry are found by time alone.
--
-- runs_retry_due_idx was led by the partition: the scheduler's requeue of due retries (every
-- claim pass, 0.2 s) named its 1,024 partitions and descended the index once for each in every
-- table partition, whether a retry was due or not; by time, a pass reads only the due runs and
-- filters them by partition (bench/RESULTS.md, 2026-12-04 evening). The new index is built
-- without blocking writes (pg/index_build.py), then the old one dropped. Expand only: older
-- builds' statements use the new index alike.
--
-- build-concurrently: runs_retry_due_time_idx ON runs (next_attempt_time) WHERE state = 'RETRY_WAIT'

DROP INDEX runs_retry_due_idx;
