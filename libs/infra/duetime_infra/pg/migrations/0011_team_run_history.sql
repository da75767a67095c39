-- Duetime schema, version 11: a team's runs across its jobs, latest first.
--
-- ListRuns over `teams/{team}/jobs/-` (the console's runs page, a team's scripts) reads the
-- team's runs by nominal time; runs_job_history_idx serves one job at a time only. Dead
-- letters, which a team looks for among millions of runs, have an index of their own that
-- holds only them. Both are built without blocking writes (pg/index_build.py). Expand only.
--
-- build-concurrently: runs_team_history_idx ON runs (team_id, nominal_time DESC, run_id DESC)
-- build-concurrently: runs_dead_letters_idx ON runs (team_id, nominal_time DESC, run_id DESC) WHERE state = 'DEAD_LETTERED'

SELECT 1;
