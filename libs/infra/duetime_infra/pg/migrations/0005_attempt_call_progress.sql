-- Duetime schema, version 5: how far an attempt's call to its target got.
--
-- At-most-once jobs are not retried when an attempt may have reached its target without an
-- answer. Workers say how far each call got: in heartbeats (NOT_BEGUN, then BEGUN to announce
-- the call; never backwards) and in their report. NULL: nobody said. Expand only: a nullable
-- column older code neither reads nor writes. (Job secrets sealed at rest, the same release,
-- live inside the jsonb definitions and need no schema change; older documents with values in
-- clear are still read.)

ALTER TABLE attempts ADD COLUMN call_progress text
    CHECK (call_progress IN ('NOT_BEGUN', 'BEGUN', 'ANSWERED'));
