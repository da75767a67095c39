-- Writing to the transactional outbox, in the transaction of the change it announces.

-- name: outbox_insert
INSERT INTO outbox (topic, message_key, payload, headers, team_id, run_id)
SELECT u.topic, u.message_key, u.payload, u.headers::jsonb, u.team_id, u.run_id
FROM unnest($1::text[], $2::bytea[], $3::bytea[], $4::text[], $5::text[], $6::uuid[])
     AS u(topic, message_key, payload, headers, team_id, run_id);
