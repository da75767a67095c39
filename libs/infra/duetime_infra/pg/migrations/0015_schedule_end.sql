-- Duetime schema, version 15: a schedule that ends after at most N runs.
--
-- A job's row keeps how many runs its schedule has made (what max_runs counts: the occurrences
-- a claim hands over to run; duetime_core/ending.py) and the scheduled time of the latest of
-- them, both written by the claim that makes them, in its transaction. Jobs stored before this
-- version count from 0: their earlier runs are not counted. Expand only; a build older than
-- this version claims without counting.

ALTER TABLE jobs
    ADD COLUMN scheduled_runs bigint NOT NULL DEFAULT 0,
    ADD COLUMN last_scheduled_time timestamptz;
