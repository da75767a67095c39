-- Duetime schema, version 2: an attempt may end HANDED_BACK.
--
-- A worker that stops (a deploy, SIGTERM) gives its unfinished attempts back: each is closed
-- HANDED_BACK and its run queued again without counting against the retry budget. Expand
-- only: the set of outcomes grows, so code of version 1 keeps working against it.

ALTER TABLE attempts DROP CONSTRAINT attempts_outcome_check;
ALTER TABLE attempts ADD CONSTRAINT attempts_outcome_check
    CHECK (outcome IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'LEASE_EXPIRED', 'CANCELLED',
                       'HANDED_BACK'));
