-- Duetime schema, version 1.
--
-- Time: every statement that needs "now" calls duetime_now(), never now() or a host clock, so a
-- test can shift the whole system's clock (a DST night, a fleet outage) by updating one row.

CREATE TABLE duetime_clock (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    "offset"   interval NOT NULL DEFAULT interval '0'
);
INSERT INTO duetime_clock DEFAULT VALUES;

-- STABLE (statement_timestamp, not clock_timestamp) so the planner can use it as an index bound;
-- each statement still sees a fresh instant.
CREATE FUNCTION duetime_now() RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT statement_timestamp() + (SELECT "offset" FROM duetime_clock WHERE singleton)
$$;

-- Teams own jobs. The notification target receives dead-letter alerts.
CREATE TABLE teams (
    team_id           text PRIMARY KEY CHECK (team_id ~ '^[a-z][a-z0-9-]{1,62}$'),
    display_name      text NOT NULL DEFAULT '',
    notification_url  text NOT NULL DEFAULT '',
    create_time       timestamptz NOT NULL DEFAULT duetime_now()
);

-- Bearer tokens, stored as SHA-256 digests only. role 'team' acts for team_id; role 'worker'
-- (team_id NULL) may call WorkerService.
CREATE TABLE api_tokens (
    token_sha256  bytea PRIMARY KEY CHECK (length(token_sha256) = 32),
    role          text NOT NULL CHECK (role IN ('team', 'worker')),
    team_id       text REFERENCES teams (team_id),
    description   text NOT NULL DEFAULT '',
    create_time   timestamptz NOT NULL DEFAULT duetime_now(),
    revoke_time   timestamptz,
    CHECK ((role = 'team') = (team_id IS NOT NULL))
);

CREATE TABLE jobs (
    job_id               uuid PRIMARY KEY,
    team_id              text NOT NULL REFERENCES teams (team_id),
    -- stable_hash(job_id) % 1024: the unit of scheduler ownership and fencing.
    partition            integer NOT NULL CHECK (partition >= 0 AND partition < 1024),
    state                text NOT NULL
                         CHECK (state IN ('ACTIVE', 'PAUSED', 'COMPLETED', 'ERROR', 'DELETED')),
    state_reason         text NOT NULL DEFAULT '',
    -- The user's definition (schedule in the user's own form, target, policies), versioned JSON.
    spec                 jsonb NOT NULL,
    -- The next occurrence: nominal (after DST resolution, before jitter) and effective (+ jitter).
    -- Claims select on the effective time, which is when the scheduler must act.
    next_run_time        timestamptz,
    next_effective_time  timestamptz,
    -- Where a paused stretch began, so resume can record it as one SKIPPED range.
    pause_time           timestamptz,
    -- Bumped on every change; the etag is derived from it.
    version              bigint NOT NULL DEFAULT 1,
    create_time          timestamptz NOT NULL DEFAULT duetime_now(),
    update_time          timestamptz NOT NULL DEFAULT duetime_now(),
    delete_time          timestamptz
);
-- Every version of every job's definition, immutable: a run refers to the version it was
-- claimed with, so an update never changes a run in flight, and the definition is stored once
-- per version rather than once per run.
CREATE TABLE job_versions (
    job_id       uuid NOT NULL REFERENCES jobs (job_id),
    version      bigint NOT NULL,
    spec         jsonb NOT NULL,
    create_time  timestamptz NOT NULL DEFAULT duetime_now(),
    PRIMARY KEY (job_id, version)
);

-- The due-job index of the design, "(partition, next_run_time)": it is keyed on the effective
-- time because that is what claims compare against the look-ahead, and only ACTIVE jobs are in
-- it, so a claim's cost grows with the jobs due, never with the jobs stored.
CREATE INDEX jobs_due_idx ON jobs (partition, next_effective_time) WHERE state = 'ACTIVE';
CREATE INDEX jobs_team_list_idx ON jobs (team_id, create_time DESC, job_id DESC)
    WHERE state <> 'DELETED';

-- Runs: one row per occurrence (or per range of MISSED/SKIPPED occurrences), partitioned by
-- nominal time so history ages out by dropping partitions. The default partition catches
-- anything outside the created ranges (a catch-up far in the past, a one-off far ahead) so an
-- insert never fails for lack of a partition.
CREATE TABLE runs (
    run_id              uuid NOT NULL,
    job_id              uuid NOT NULL,
    team_id             text NOT NULL,
    partition           integer NOT NULL,
    nominal_time        timestamptz NOT NULL,
    effective_time      timestamptz NOT NULL,
    -- 'SCHEDULE' or 'TRIGGER:<request_id>': with job_id and nominal_time, the run key.
    origin              text NOT NULL,
    state               text NOT NULL CHECK (state IN ('QUEUED', 'WAITING', 'RUNNING',
                        'RETRY_WAIT', 'SUCCEEDED', 'DEAD_LETTERED', 'MISSED', 'SKIPPED',
                        'CANCELLED')),
    reason              text NOT NULL DEFAULT '',
    reason_detail       text NOT NULL DEFAULT '',
    -- Number of the latest attempt: the fencing token of the open one. Only ever rises.
    attempt             integer NOT NULL DEFAULT 0,
    -- Attempts allowed up to and including this number; a redrive raises it.
    attempt_limit       integer NOT NULL,
    next_attempt_time   timestamptz,
    -- The delivery that started the current attempt, so a repeated start returns it.
    start_delivery_id   text,
    first_start_time    timestamptz,
    range_end_time      timestamptz,
    occurrence_count    integer NOT NULL DEFAULT 1,
    trace_id            text NOT NULL DEFAULT '',
    traceparent         text NOT NULL DEFAULT '',
    -- The job definition the run was claimed with (job_versions); updates do not change it.
    job_version         bigint NOT NULL,
    priority            text NOT NULL DEFAULT 'NORMAL',
    -- The scheduler that claimed the run and the partition token it claimed under: who made
    -- it, and proof that it was the partition's owner at the time.
    claimed_by          text NOT NULL DEFAULT '',
    claim_epoch         bigint NOT NULL DEFAULT 0,
    claim_revision      bigint NOT NULL DEFAULT 0,
    create_time         timestamptz NOT NULL DEFAULT duetime_now(),
    update_time         timestamptz NOT NULL DEFAULT duetime_now(),
    PRIMARY KEY (run_id, nominal_time),
    CONSTRAINT runs_run_key UNIQUE (job_id, nominal_time, origin)
) PARTITION BY RANGE (nominal_time);
CREATE TABLE runs_default PARTITION OF runs DEFAULT;
CREATE INDEX runs_run_id_idx ON runs (run_id);
CREATE INDEX runs_job_history_idx ON runs (job_id, nominal_time DESC, run_id DESC);
CREATE INDEX runs_retry_due_idx ON runs (partition, next_attempt_time)
    WHERE state = 'RETRY_WAIT';
CREATE INDEX runs_queued_idx ON runs (effective_time) WHERE state = 'QUEUED';
-- The runs that matter to a job's overlap policy (a QUEUED run may be a requeued retry, which
-- still holds the job), read under the job's row lock when an attempt starts or a run ends.
CREATE INDEX runs_job_active_idx ON runs (job_id)
    WHERE state IN ('QUEUED', 'WAITING', 'RUNNING', 'RETRY_WAIT');

-- Attempts, partitioned by their run's nominal time so they age out with it.
CREATE TABLE attempts (
    run_id             uuid NOT NULL,
    nominal_time       timestamptz NOT NULL,
    number             integer NOT NULL CHECK (number >= 1),
    partition          integer NOT NULL,
    worker_id          text NOT NULL,
    delivery_id        text NOT NULL DEFAULT '',
    start_time         timestamptz NOT NULL,
    lease_expire_time  timestamptz NOT NULL,
    -- start + timeout + grace: closed as TIMED_OUT after this, heartbeats or not.
    deadline           timestamptz NOT NULL,
    end_time           timestamptz,
    outcome            text CHECK (outcome IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT',
                       'LEASE_EXPIRED', 'CANCELLED')),
    error              text NOT NULL DEFAULT '',
    cancel_reason      text NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, nominal_time, number),
    CHECK ((end_time IS NULL) = (outcome IS NULL))
) PARTITION BY RANGE (nominal_time);
CREATE TABLE attempts_default PARTITION OF attempts DEFAULT;
CREATE INDEX attempts_open_lease_idx ON attempts (partition, lease_expire_time)
    WHERE end_time IS NULL;
CREATE INDEX attempts_open_deadline_idx ON attempts (partition, deadline)
    WHERE end_time IS NULL;
-- At most one open attempt per run, whatever the code above it does.
CREATE UNIQUE INDEX attempts_one_open_idx ON attempts (run_id, nominal_time)
    WHERE end_time IS NULL;

-- The transactional outbox: written in the same transaction as the state change it announces,
-- drained to Kafka by the relay and deleted once the broker acknowledged it.
CREATE TABLE outbox (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic        text NOT NULL,
    message_key  bytea NOT NULL,
    payload      bytea NOT NULL,
    -- Kafka headers, including the run's W3C traceparent.
    headers      jsonb NOT NULL DEFAULT '{}',
    team_id      text NOT NULL,
    -- The run the message is about: the reconciler asks whether a run has a message pending.
    run_id       uuid,
    create_time  timestamptz NOT NULL DEFAULT duetime_now()
);
CREATE INDEX outbox_run_idx ON outbox (run_id) WHERE run_id IS NOT NULL;

-- The highest fencing token, (epoch, etcd create_revision), seen per partition. Every claim
-- transaction ends by raising-or-matching it; an older owner's update matches no row.
CREATE TABLE partition_tokens (
    partition    integer PRIMARY KEY CHECK (partition >= 0 AND partition < 1024),
    epoch        bigint NOT NULL DEFAULT 0,
    revision     bigint NOT NULL DEFAULT 0,
    update_time  timestamptz NOT NULL DEFAULT duetime_now()
);
INSERT INTO partition_tokens (partition) SELECT generate_series(0, 1023);

-- request_id records for idempotent calls (CreateJob, TriggerJob, RedriveRun), kept for a
-- bounded time. The fingerprint detects the same id reused for a different request.
CREATE TABLE request_ids (
    team_id      text NOT NULL,
    operation    text NOT NULL,
    request_id   text NOT NULL,
    fingerprint  bytea NOT NULL,
    resource_id  uuid NOT NULL,
    create_time  timestamptz NOT NULL DEFAULT duetime_now(),
    PRIMARY KEY (team_id, operation, request_id)
);
CREATE INDEX request_ids_age_idx ON request_ids (create_time);

-- Weekly partitions of runs and attempts. Creates those from the retention cutoff to a few
-- weeks ahead, moving any rows the default partition already holds for a new range (under a
-- lock on the table, so no reader misses a moving row and no insert slips in before the
-- attach). Retires history by finality,
-- never a run still in flight: a week whose range ended before the cutoff is dropped, with its
-- attempts, once none of its runs can change any more; the default partition (past-dated
-- one-offs, catch-up far in the past) loses final runs unchanged for the whole retention.
-- Moving rows out of the default partition locks the whole table briefly; it happens only when
-- maintenance was not run for weeks or the clock jumped.
-- Called by the migrate command and hourly by the scheduler that owns partition 0.
CREATE FUNCTION duetime_maintain_partitions(
    retention interval DEFAULT interval '30 days',
    weeks_ahead integer DEFAULT 4
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    base text;
    week_start timestamptz;
    lo timestamptz;
    hi timestamptz;
    part text;
    child record;
    in_flight boolean;
    has_rows boolean;
    cutoff timestamptz := duetime_now() - retention;
BEGIN
    FOREACH base IN ARRAY ARRAY['runs', 'attempts'] LOOP
        week_start := date_trunc('week', cutoff AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
        WHILE week_start < duetime_now() + make_interval(weeks => weeks_ahead) LOOP
            lo := week_start;
            hi := week_start + interval '7 days';
            part := format('%s_%s', base, to_char(lo AT TIME ZONE 'UTC', 'YYYYMMDD'));
            IF to_regclass(part) IS NULL AND hi > cutoff THEN
                EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE nominal_time >= $1 AND '
                               'nominal_time < $2)', base || '_default')
                    INTO has_rows USING lo, hi;
                IF has_rows THEN
                    -- Rows will move: readers must wait on the parent and plan again after
                    -- the commit, or they would look for them where they no longer are.
                    EXECUTE format('LOCK TABLE %I IN ACCESS EXCLUSIVE MODE', base);
                END IF;
                EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                               part, base);
                EXECUTE format('WITH moved AS (DELETE FROM %I WHERE nominal_time >= $1 AND '
                               'nominal_time < $2 RETURNING *) INSERT INTO %I SELECT * FROM moved',
                               base || '_default', part) USING lo, hi;
                EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                               base, part, lo, hi);
            END IF;
            week_start := hi;
        END LOOP;
    END LOOP;
    FOR child IN
        SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'runs'::regclass AND c.relname <> 'runs_default'
    LOOP
        hi := substring(child.bound FROM 'TO \(''([^'']+)''\)')::timestamptz;
        CONTINUE WHEN hi > cutoff;
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE state IN '
                       '(''QUEUED'', ''WAITING'', ''RUNNING'', ''RETRY_WAIT''))', child.relname)
            INTO in_flight;
        CONTINUE WHEN in_flight;
        EXECUTE format('DROP TABLE %I', child.relname);
        EXECUTE format('DROP TABLE IF EXISTS %I', 'attempts_' || substring(child.relname FROM 6));
    END LOOP;
    WITH retired AS (
        DELETE FROM runs_default
        WHERE state IN ('SUCCEEDED', 'DEAD_LETTERED', 'MISSED', 'SKIPPED', 'CANCELLED')
          AND update_time < cutoff
        RETURNING run_id, nominal_time
    )
    DELETE FROM attempts a USING retired r
    WHERE a.run_id = r.run_id AND a.nominal_time = r.nominal_time;
    DELETE FROM request_ids WHERE create_time < duetime_now() - interval '24 hours';
END
$$;
