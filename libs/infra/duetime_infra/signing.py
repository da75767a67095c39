"""Signed calls: what lets a target check that a call came from Duetime.

Two forms, each a team's choice per job:

- Standard Webhooks signatures (``webhook-id``, ``webhook-timestamp``, ``webhook-signature``):
  HMAC-SHA256 over ``id.timestamp.body`` with the team's secret. While a secret is rotated
  the team has two, and each call carries one ``v1,<base64>`` signature per secret, separated
  by spaces: a target that knows either accepts it.
- An ID token (a JWT signed ES256, in ``Authorization: Bearer``), minted per attempt: issuer,
  audience (the job's), subject (the job's name), the run key and the attempt, a short expiry.
  Its ``kid`` names the key; the public keys are served as a JWKS document. While a key is
  rotated both public keys are listed, and tokens are signed with the older one (the one
  every target's cached JWKS already holds) until it is retired.

A team's keys come as ``SigningKeys``: in clear only in the scheduler, which opens them, the
worker, which signs with them, and the one answer that creates a secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
# How long an ID token is good for: a target that receives it late (a slow proxy) still
# accepts it; one replayed later does not.
TOKEN_LIFETIME_SECONDS = 300
# The claims that carry what Duetime adds to the standard ones.
RUN_KEY_CLAIM = "duetime_run_key"
ATTEMPT_CLAIM = "duetime_attempt"
# An ID token is PyJWT's JWS over its claims, compact JSON as ``jwt.encode`` writes them: made
# once, not per token, with only ES256 to look up (``jwt.encode`` checks and copies a claims
# dict it is not given here, and builds its JSON encoder each call).
_TOKENS = jwt.PyJWS(algorithms=["ES256"])
_CLAIMS_JSON = json.JSONEncoder(separators=(",", ":"))


@dataclass(frozen=True, eq=False)
class SigningKey:
    """One generation of a team's keys: a webhook secret and an ES256 key, named ``key_id``.
    Its ``repr`` shows the name only."""

    key_id: str
    secret: bytes = field(repr=False)
    private_key: ec.EllipticCurvePrivateKey = field(repr=False)

    @property
    def secret_text(self) -> str:
        """The secret as a Standard Webhooks library takes it: ``whsec_<base64>``."""
        return SECRET_PREFIX + base64.b64encode(self.secret).decode("ascii")

    def private_der(self) -> bytes:
        return self.private_key.private_bytes(
            serialization.Encoding.DER,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def public_jwk(self) -> dict[str, Any]:
        jwk: dict[str, Any] = ECAlgorithm.to_jwk(self.private_key.public_key(), as_dict=True)
        return {**jwk, "kid": self.key_id, "use": "sig", "alg": "ES256"}


def new_signing_key(key_id: str | None = None) -> SigningKey:
    """A fresh generation of keys, named ``key_id`` (by default a random id)."""
    return SigningKey(
        key_id or uuid.uuid4().hex[:16],
        os.urandom(SECRET_BYTES),
        ec.generate_private_key(ec.SECP256R1()),
    )


def signing_key_from(key_id: str, secret: bytes, private_der: bytes) -> SigningKey:
    """A generation of keys as stored (``secret`` and ``private_der``, opened)."""
    private = serialization.load_der_private_key(private_der, password=None)
    if not isinstance(private, ec.EllipticCurvePrivateKey) or not isinstance(
        private.curve, ec.SECP256R1
    ):
        raise ValueError(f"signing key {key_id!r}: not a P-256 private key")
    return SigningKey(key_id, secret, private)


@dataclass(frozen=True)
class SigningKeys:
    """A team's active generations of keys, oldest first (at most two: during a rotation)."""

    active: Sequence[SigningKey]

    def __post_init__(self) -> None:
        if not self.active:
            raise ValueError("a team that signs has at least one key")

    @property
    def token_key(self) -> SigningKey:
        """The key ID tokens are signed with: the oldest, published longest."""
        return self.active[0]

    def jwks(self) -> dict[str, Any]:
        return jwks(self.active)


def jwks(keys: Sequence[SigningKey]) -> dict[str, Any]:
    """The JWKS document that lists ``keys``' public halves."""
    return {"keys": [key.public_jwk() for key in keys]}


def webhook_headers(
    keys: SigningKeys, message_id: str, timestamp: int, body: bytes
) -> dict[str, str]:
    """The Standard Webhooks headers of one call: signed by every active secret."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    signatures = " ".join(
        "v1," + base64.b64encode(hmac.digest(key.secret, signed, hashlib.sha256)).decode("ascii")
        for key in keys.active
    )
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signatures,
    }


@dataclass(frozen=True)
class TokenClaims:
    """What an ID token says about its call."""

    issuer: str
    audience: str
    subject: str  # the job's name, teams/{team}/jobs/{job_id}
    run_key: str
    attempt: int


def mint_id_token(
    keys: SigningKeys,
    claims: TokenClaims,
    now: int,
    lifetime: int = TOKEN_LIFETIME_SECONDS,
) -> str:
    """An ES256 JWT for one attempt, signed by the team's token key (``kid`` in its header)."""
    payload = _CLAIMS_JSON.encode(
        {
            "iss": claims.issuer,
            "aud": claims.audience,
            "sub": claims.subject,
            "iat": now,
            "exp": now + lifetime,
            "jti": os.urandom(16).hex(),
            RUN_KEY_CLAIM: claims.run_key,
            ATTEMPT_CLAIM: claims.attempt,
        }
    )
    key = keys.token_key
    return _TOKENS.encode(
        payload.encode(), key.private_key, "ES256", {"kid": key.key_id}, sort_headers=False
    )
