-- Duetime schema, version 17: signed calls (duetime_infra.signing).
--
-- A team's signing keys, one row per generation: the webhook secret and the ES256 private key
-- sealed under the secrets keyring (duetime_infra.secrets, bound to the team and the key id;
-- never in clear here), and the public key as a JWK. Retiring a key erases its secrets at once
-- and keeps its public key, served in the team's JWKS for a while so that tokens minted just
-- before still verify. A team's own default for jobs that do not say how they sign. Expand
-- only.

CREATE TABLE team_signing_keys (
    team_id        text NOT NULL REFERENCES teams (team_id),
    key_id         text NOT NULL CHECK (key_id ~ '^[a-z0-9]{1,32}$'),
    create_time    timestamptz NOT NULL DEFAULT duetime_now(),
    retire_time    timestamptz,
    -- The keyring key both values are sealed under.
    sealed_key_id  text,
    webhook_secret bytea,
    token_key      bytea,
    public_jwk     jsonb NOT NULL,
    PRIMARY KEY (team_id, key_id),
    CHECK ((retire_time IS NULL) = (sealed_key_id IS NOT NULL)),
    CHECK ((sealed_key_id IS NULL) = (webhook_secret IS NULL)),
    CHECK ((sealed_key_id IS NULL) = (token_key IS NULL))
);

ALTER TABLE teams
    ADD COLUMN default_call_signing text NOT NULL DEFAULT 'OFF'
        CHECK (default_call_signing IN ('OFF', 'WEBHOOK', 'ID_TOKEN', 'WEBHOOK_AND_ID_TOKEN'));
