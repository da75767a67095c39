-- Duetime schema, version 21: a run is kept by three indexes, not four, and narrower ones.
--
-- runs_job_history_idx (job_id, nominal_time DESC, run_id DESC) repeated the leading columns of
-- the run key's index (job_id, nominal_time, origin), which serves a job's history alike: read
-- backwards, with the rare runs of one job at the same nominal time put in order by an
-- incremental sort. runs_team_history_idx (team_id, nominal_time DESC, run_id DESC) gives way
-- to runs_team_time_idx (team_id, nominal_time): without run_id its entries are 16 bytes
-- narrower, and ascending, a team's newest run goes after its previous one, so a page that
-- splits keeps its older entries full instead of half empty (docs/capacity.md). ListRuns over
-- a team reads it backwards the same way. The new index is built without blocking writes
-- (pg/index_build.py), then the old ones dropped. Expand only: older builds' statements use the
-- remaining indexes alike.
--
-- build-concurrently: runs_team_time_idx ON runs (team_id, nominal_time)

DROP INDEX runs_job_history_idx;
DROP INDEX runs_team_history_idx;
