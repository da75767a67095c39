"""Signed calls (duetime_infra.signing), checked by independent verifiers: the Standard
Webhooks library for signatures, PyJWT with the JWKS document for ID tokens."""

from __future__ import annotations

import json
import time

import jwt
import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from duetime_infra.signing import (
    ATTEMPT_CLAIM,
    RUN_KEY_CLAIM,
    SigningKeys,
    TokenClaims,
    mint_id_token,
    new_signing_key,
    signing_key_from,
    webhook_headers,
)

BODY = b'{"hello": "target"}'
CLAIMS = TokenClaims(
    issuer="https://duetime.test",
    audience="https://target.test/hook",
    subject="teams/payments/jobs/0b7e6f0e-0000-4000-8000-000000000001",
    run_key="0b7e6f0e-0000-4000-8000-000000000001/2026-12-06T13:00:00Z",
    attempt=2,
)


def test_a_webhook_signature_verifies_and_a_tampered_body_does_not() -> None:
    keys = SigningKeys([new_signing_key("k1")])
    headers = webhook_headers(keys, "run-1", int(time.time()), BODY)
    verifier = Webhook(keys.active[0].secret_text)
    assert verifier.verify(BODY, headers) == json.loads(BODY)
    with pytest.raises(WebhookVerificationError):
        verifier.verify(BODY + b" ", headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_signing_key().secret_text).verify(BODY, headers)


def test_during_a_rotation_either_secret_verifies() -> None:
    old, new = new_signing_key("old"), new_signing_key("new")
    headers = webhook_headers(SigningKeys([old, new]), "run-1", int(time.time()), BODY)
    assert len(headers["webhook-signature"].split(" ")) == 2
    for key in (old, new):
        assert Webhook(key.secret_text).verify(BODY, headers) == json.loads(BODY)


def test_an_old_timestamp_is_refused() -> None:
    keys = SigningKeys([new_signing_key()])
    headers = webhook_headers(keys, "run-1", int(time.time()) - 3600, BODY)
    with pytest.raises(WebhookVerificationError):
        Webhook(keys.active[0].secret_text).verify(BODY, headers)


def _verify(token: str, jwks: dict[str, object], audience: str) -> dict[str, object]:
    kid = jwt.get_unverified_header(token)["kid"]
    key = jwt.PyJWKSet.from_dict(jwks)[kid]
    claims: dict[str, object] = jwt.decode(
        token,
        key,
        algorithms=["ES256"],
        audience=audience,
        issuer=CLAIMS.issuer,
        options={"require": ["exp", "iat", "iss", "aud", "sub"]},
    )
    return claims


def test_an_id_token_verifies_against_the_jwks_with_its_claims() -> None:
    keys = SigningKeys([new_signing_key("k1")])
    now = int(time.time())
    claims = _verify(mint_id_token(keys, CLAIMS, now), keys.jwks(), CLAIMS.audience)
    assert claims["sub"] == CLAIMS.subject
    assert claims[RUN_KEY_CLAIM] == CLAIMS.run_key
    assert claims[ATTEMPT_CLAIM] == 2
    assert 0 < claims["exp"] - now <= 300  # type: ignore[operator]


def test_an_id_token_says_what_a_jwt_does_and_each_has_its_own_id() -> None:
    keys = SigningKeys([new_signing_key("k1")])
    tokens = [mint_id_token(keys, CLAIMS, 1000) for _ in range(2)]
    header = jwt.get_unverified_header(tokens[0])
    assert header == {"typ": "JWT", "alg": "ES256", "kid": "k1"}
    ids = [jwt.decode(t, options={"verify_signature": False})["jti"] for t in tokens]
    assert ids[0] != ids[1]
    assert all(len(bytes.fromhex(i)) == 16 for i in ids)


def test_a_wrong_audience_or_an_expired_token_is_refused() -> None:
    keys = SigningKeys([new_signing_key("k1")])
    token = mint_id_token(keys, CLAIMS, int(time.time()))
    with pytest.raises(jwt.InvalidAudienceError):
        _verify(token, keys.jwks(), "https://elsewhere.test/")
    expired = mint_id_token(keys, CLAIMS, int(time.time()) - 600)
    with pytest.raises(jwt.ExpiredSignatureError):
        _verify(expired, keys.jwks(), CLAIMS.audience)


def test_during_a_rotation_tokens_are_signed_by_the_older_key_and_both_are_listed() -> None:
    old, new = new_signing_key("old"), new_signing_key("new")
    keys = SigningKeys([old, new])
    token = mint_id_token(keys, CLAIMS, int(time.time()))
    assert jwt.get_unverified_header(token)["kid"] == "old"
    assert [k["kid"] for k in keys.jwks()["keys"]] == ["old", "new"]
    assert _verify(token, keys.jwks(), CLAIMS.audience)["sub"] == CLAIMS.subject
    # A token signed by a key that is not listed does not verify.
    forged = mint_id_token(SigningKeys([new_signing_key("old")]), CLAIMS, int(time.time()))
    with pytest.raises(jwt.InvalidSignatureError):
        _verify(forged, keys.jwks(), CLAIMS.audience)


def test_keys_round_trip_as_stored_and_never_show_in_their_repr() -> None:
    key = new_signing_key("k1")
    again = signing_key_from("k1", key.secret, key.private_der())
    assert again.public_jwk() == key.public_jwk()
    assert "d" not in key.public_jwk()
    assert key.secret.hex() not in repr(key)
    assert key.secret_text not in repr(key)
