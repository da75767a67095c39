-- Duetime schema, version 31: a run's trace begins with the run's own ids.
--
-- A run kept the context of the span that began its trace as 25 bytes (schema 28): a random
-- trace id, the span's id and its flags. That span now takes ids derived from the run's id
-- (tracecontext.run_trace_ids: the SHA-256 of the id's 16 bytes, the first 16 bytes the trace
-- id and the next 8 the span's), so the run keeps the flags alone: trace_context is 1 byte.
-- Runs made before, or by an older build during the roll, or under a tracer provider without
-- Duetime's id generator keep the 25 bytes (or, before schema 28, the text); readers take
-- every form.
--
-- No column changes. An older build reads the 1-byte form as a malformed traceparent: what it
-- sends for those runs carries one that W3C receivers ignore, so their traces break there, and
-- its api shows them with no trace id. Its archive would keep the flags' hex as their trace
-- id; this build's export reads it with duetime_run_trace_id.

-- A run's trace id (32 hex digits; '' for none) from the columns that keep its trace context,
-- in each form tracecontext.stored_trace has written (read_trace reads them in Python).
CREATE FUNCTION duetime_run_trace_id(run_id uuid, trace_context bytea, traceparent text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN octet_length(trace_context) = 1
                THEN encode(substring(sha256(uuid_send(run_id)) FROM 1 FOR 16), 'hex')
                WHEN trace_context IS NOT NULL
                THEN encode(substring(trace_context FROM 1 FOR 16), 'hex')
                WHEN traceparent ~ '^[0-9a-f]{2}-[0-9a-f]{32}-'
                THEN substring(traceparent FROM 4 FOR 32)
                ELSE '' END
$$;
