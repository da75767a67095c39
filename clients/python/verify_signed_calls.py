"""Checks that calls came from Duetime (docs/clients.md, "Verifying Duetime's calls"), with the
Standard Webhooks library and PyJWT. Run on the calls tests/e2e/test_signed_calls.py recorded:

    DUETIME_SIGNED_CALLS=calls.json python clients/python/verify_signed_calls.py

prints "CASE <name>: verified" or "CASE <name>: refused: <why>" for each.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, tzinfo
from typing import Any

# docs:begin python-verify
import jwt
from standardwebhooks.webhooks import Webhook

# How far the worker's clock and this one may disagree (the token's iat and exp).
LEEWAY = 30


class CallVerifier:
    """Checks one team's calls: ``secret`` is its ``whsec_...`` secret, ``jwks_url``
    https://<gateway>/v1/teams/<team>/jwks.json (fetched, cached and fetched again on an
    unknown kid by PyJWT), ``issuer`` the ``iss`` Duetime's workers name
    (DUETIME_SIGNING_ISSUER)."""

    def __init__(
        self, secret: str, jwks_url: str, issuer: str, tls: ssl.SSLContext | None = None
    ) -> None:
        self.webhook = Webhook(secret)
        self.keys = jwt.PyJWKClient(jwks_url, ssl_context=tls)
        self.issuer = issuer

    def verify(self, headers: dict[str, str], body: bytes, audience: str) -> dict[str, Any]:
        """The ID token's claims (sub: the job, duetime_run_key: the run, duetime_attempt:
        the attempt) of a call with these headers (names in lower case) and this exact body,
        for the job's audience (its token_audience, by default its URL without query);
        raises when either check fails. The body is not parsed (it may be empty, text, or
        JSON); the token's times are checked with ``LEEWAY`` for the clocks' skew."""
        self.webhook.verify(body, headers, json_parse=False)
        token = headers.get("authorization", "").removeprefix("Bearer ")
        key = self.keys.get_signing_key_from_jwt(token)
        claims: dict[str, Any] = jwt.decode(
            token,
            key.key,
            algorithms=["ES256"],
            audience=audience,
            issuer=self.issuer,
            options={"require": ["exp", "iss", "aud", "sub"]},
            leeway=LEEWAY,
        )
        return claims


# docs:end python-verify


@contextmanager
def token_clock_later(seconds: float) -> Iterator[None]:
    """ID tokens checked as if ``seconds`` later (PyJWT reads its clock from
    ``datetime.now``; it has no option for another): the test's expired token."""
    real = datetime

    class Later(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> Later:
            moved = real.now(tz) + timedelta(seconds=seconds)
            return cls.fromtimestamp(moved.timestamp(), moved.tzinfo)

    jwt.api_jwt.datetime = Later  # type: ignore[attr-defined]
    try:
        yield
    finally:
        jwt.api_jwt.datetime = real  # type: ignore[attr-defined]


def main() -> None:
    with open(os.environ["DUETIME_SIGNED_CALLS"], encoding="utf-8") as file:
        calls = json.load(file)
    tls = ssl.create_default_context(cafile=os.environ.get("DUETIME_TLS_CA_FILE") or None)
    verifier = CallVerifier(calls["secret"], calls["jwks_url"], calls["issuer"], tls)
    for case in calls["cases"]:
        headers = {name.lower(): value for name, value in case["headers"].items()}
        body = base64.b64decode(case["body_base64"])
        try:
            with token_clock_later(case["later_seconds"]):
                verifier.verify(headers, body, case["audience"])
            print(f"CASE {case['name']}: verified")
        except Exception as error:  # every refusal is reported, whatever its kind
            print(f"CASE {case['name']}: refused: {type(error).__name__}: {error}")


if __name__ == "__main__":
    main()
