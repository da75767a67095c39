-- name: maintain_partitions
-- Two statements (run without arguments): the DDL may outlive the scheduler session's
-- statement timeout, which is sized for claims.
SET LOCAL statement_timeout = 0;
SELECT duetime_maintain_partitions();
