-- Duetime schema, version 24: an insert into the outbox wakes the relays.
--
-- Each statement that adds outbox rows notifies channel duetime_outbox when its transaction
-- commits (one notification a transaction: PostgreSQL folds repeats of the same one). A relay
-- listening on the channel publishes new rows at once and otherwise polls only as a safety net,
-- instead of polling every 50 ms whether or not anything was added. Expand only: a relay that
-- does not listen polls as before.

CREATE FUNCTION duetime_outbox_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('duetime_outbox', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION duetime_outbox_notify();
