-- Duetime schema, version 22: a team's rate limit keeps every charge made ahead of time.
--
-- A run claimed ahead of its due time is charged at that time. The GCRA state keeps each
-- such due time (rate_ahead_at, in order) with how many runs are charged at it (rate_ahead_n),
-- until it comes; rate_gap_tat now holds the TAT of the charges before them, and rate_tat
-- the TAT of both in turn, past every charge in time order: what an older build goes on from
-- (duetime_core.quotas._take_rate). rate_ahead_from is no longer written. Both new columns
-- NULL: no charge ahead, as for every team until its next claim ahead. Expand only: an older
-- build reads rate_tat (or its own chain) and charges after it, which is safe; this build
-- finds the older build's writes by rate_tat no longer matching the rest, and goes on from
-- rate_tat.

ALTER TABLE team_usage
    ADD COLUMN rate_ahead_at timestamptz[],
    ADD COLUMN rate_ahead_n integer[];
