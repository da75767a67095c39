-- Duetime schema, version 3: where a run's current attempt budget began.
--
-- RedriveRun gives a dead-lettered run a fresh budget; attempt numbers keep rising, so the
-- hand-backs that are free (MAX_HAND_BACKS) are counted among the attempts numbered above
-- the number the run had reached when its budget began. It cannot be worked out from
-- attempt_limit, which each free hand-back raises by one. 0: the run's first budget (every
-- run before this version, and a redrive by code of version 2, which counts as before: over
-- the run's whole life). Expand only: a column with a default, which older code ignores.

ALTER TABLE runs ADD COLUMN budget_start_attempt integer NOT NULL DEFAULT 0;
