-- Duetime schema, version 31: a run's trace begins with the run's own ids.
--
-- A run kept the context of the span that began its trace as 25 bytes (schema 28): a random
-- trace id, the span's id and its flags. That span now takes ids derived from the run's id
-- (tracecontext.run_trace_ids: the SHA-256 of the id's 16 bytes, the first 16 bytes the trace
-- id and the next 8 the span's), so the run keeps the flags alone: trace_context is 1 byte. A
-- run whose first span took other ids (a tracer provider without Duetime's id generator, a
-- redrive's new span) keeps the 25 bytes, and readers take either form.
--
-- No column changes. An older build reads the 1-byte form as a malformed traceparent: what it
-- sends for those runs carries one that W3C receivers ignore, so their traces break there, and
-- its api shows them with no trace id. Its archive would keep the flags' hex as their trace
-- id; this build's export reads it with duetime_run_trace_id.

-- The trace id (32 hex digits) of a run whose trace context is its flags alone.
CREATE FUNCTION duetime_run_trace_id(run_id uuid) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT encode(substring(sha256(uuid_send(run_id)) FROM 1 FOR 16), 'hex')
$$;
