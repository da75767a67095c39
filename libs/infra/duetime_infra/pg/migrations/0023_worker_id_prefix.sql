-- Duetime schema, version 23: a worker token may be bound to the worker ids it acts for.
--
-- worker_id_prefix: the ids a worker token's calls may name begin with it (a fleet's pod-name
-- prefix, ending with its separator); '' binds nothing, as every token made before. Only worker
-- tokens have one. Expand only: an older build neither reads nor enforces it, so a binding
-- holds once every scheduler runs a build of this version.

ALTER TABLE api_tokens
    ADD COLUMN worker_id_prefix text NOT NULL DEFAULT ''
        CHECK (role = 'worker' OR worker_id_prefix = '');
