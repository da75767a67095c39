-- Duetime schema, version 20: a team's rate limit with runs charged ahead of their time.
--
-- A run claimed ahead of its due time is charged at that time; the GCRA state keeps, beside
-- rate_tat (the end of what is charged), where such a chain of charges begins and the TAT of
-- the runs arriving before it that fill the gap up to it (duetime_core.quotas._take_rate).
-- Both NULL: no chain, as for every team until its next claim ahead. Expand only: a build
-- older than this version neither reads nor writes them, and only charges after rate_tat.

ALTER TABLE team_usage
    ADD COLUMN rate_ahead_from timestamptz,
    ADD COLUMN rate_gap_tat timestamptz;
