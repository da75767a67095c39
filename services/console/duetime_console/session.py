"""Sessions sealed into their cookie: AES-256-GCM under the console's keyring.

The console keeps no session state: the cookie carries the session (the token, the role, the
team, the CSRF token, the viewer's zone, when it was made), sealed with the keyring's current
key and opened with any of its keys. So any copy of the console serves any request, a restart
signs nobody out, and keys rotate as the secrets-at-rest keyring does (add a key, make it
current, remove the old one after a session's lifetime). A cookie altered, sealed under a key
no longer in the ring, or older than the session's lifetime opens as no session.

The cookie is ``__Host-`` prefixed, ``Secure``, ``HttpOnly``, ``SameSite=Strict``: the
browser sends it only over HTTPS, to this host, from this site's own pages, and no script
reads it. Signing out replaces it; a copy taken before then stays valid until its lifetime
ends, which is why the lifetime is short and a leaked team token is revoked at the API.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import secrets
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from duetime_infra.secrets.keyring import Keyring

COOKIE = "__Host-duetime-session"
_VERSION = "s1"
_NONCE_BYTES = 12
# Bound to the cookie's name and the format's version: a sealed value of another kind, or
# another cookie, does not open as a session.
_CONTEXT = f"duetime-console/{_VERSION}/{COOKIE}".encode()

TEAM = "team"
OPERATOR = "operator"


def new_csrf() -> str:
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Session:
    """One browser's session; ``token`` is empty until it signs in."""

    csrf: str = field(default_factory=new_csrf)
    token: str = field(default="", repr=False)
    role: str = ""
    team: str = ""
    zone: str = "UTC"
    issued_at: float = field(default_factory=time.time)
    # One message for the next page (what an action did), shown once.
    flash: str = ""

    @property
    def signed_in(self) -> bool:
        return bool(self.token)

    @property
    def operator(self) -> bool:
        return self.role == OPERATOR

    def signed_in_as(self, token: str, role: str, team: str, zone: str) -> Session:
        """A new session for a sign-in: a fresh CSRF token, so one learned before it is void."""
        return Session(token=token, role=role, team=team, zone=zone)

    def with_flash(self, message: str) -> Session:
        return replace(self, flash=message)


class SessionSealer:
    """Seals sessions with the keyring's current key; opens those sealed by any of its keys."""

    def __init__(self, keyring: Keyring, lifetime_seconds: float) -> None:
        self._current = keyring.current
        self._ciphers = {key_id: AESGCM(key) for key_id, key in keyring.keys.items()}
        self.lifetime_seconds = lifetime_seconds

    def seal(self, session: Session) -> str:
        nonce = os.urandom(_NONCE_BYTES)
        plain = json.dumps(asdict(session), separators=(",", ":")).encode()
        data = self._ciphers[self._current].encrypt(nonce, plain, _CONTEXT)
        sealed = base64.urlsafe_b64encode(nonce + data).decode().rstrip("=")
        return f"{_VERSION}.{self._current}.{sealed}"

    def open(self, value: str, now: float | None = None) -> Session | None:
        """The session ``value`` seals, or None: unreadable, altered, or expired."""
        version, _, rest = value.partition(".")
        key_id, _, sealed = rest.partition(".")
        cipher = self._ciphers.get(key_id)
        if version != _VERSION or cipher is None:
            return None
        try:
            raw = base64.urlsafe_b64decode(sealed + "=" * (-len(sealed) % 4))
            plain = cipher.decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], _CONTEXT)
            fields: dict[str, Any] = json.loads(plain)
            session = Session(**fields)
        except (binascii.Error, ValueError, InvalidTag, TypeError):
            return None
        age = (time.time() if now is None else now) - session.issued_at
        # A minute's grace for a copy whose clock is behind the one that sealed it.
        if not -60 <= age < self.lifetime_seconds:
            return None
        return session
