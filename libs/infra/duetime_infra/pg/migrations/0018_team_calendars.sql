-- Duetime schema, version 18: a team's calendars (duetime_core.calendars, docs/calendars.md).
--
-- One row per calendar: its rules as a versioned JSON document (duetime_infra.codec.calendar
-- _json), its version for etags. Jobs name the calendars they exclude in their spec document
-- (`excluded_calendars`); the claim reads the rows of a batch's jobs in one query by the
-- primary key. Expand only: no existing table changes.

CREATE TABLE calendars (
    team_id     text NOT NULL REFERENCES teams (team_id),
    calendar_id text NOT NULL CHECK (calendar_id ~ '^[a-z][a-z0-9-]{1,62}$'),
    rules       jsonb NOT NULL,
    version     bigint NOT NULL DEFAULT 1,
    create_time timestamptz NOT NULL DEFAULT duetime_now(),
    update_time timestamptz NOT NULL DEFAULT duetime_now(),
    PRIMARY KEY (team_id, calendar_id)
);
