"""Who is calling: bearer tokens from metadata, resolved to a principal for the call.

``Role``, ``Principal`` and ``token_digest`` are core's (``duetime_core.identity``), offered
here too for the gRPC layer's callers."""

from __future__ import annotations

import contextvars
import time
from collections.abc import Awaitable, Callable

from duetime_core.errors import PermissionDenied, Unauthenticated
from duetime_core.identity import Principal, Role, token_digest

_current: contextvars.ContextVar[Principal] = contextvars.ContextVar("duetime_principal")


def current_principal() -> Principal:
    try:
        return _current.get()
    except LookupError:
        raise Unauthenticated("no credentials", reason="UNAUTHENTICATED") from None


__all__ = [
    "Principal",
    "Role",
    "TokenCache",
    "bearer_token",
    "current_principal",
    "current_team",
    "reset_principal",
    "set_principal",
    "token_digest",
]


def current_team() -> str:
    principal = current_principal()
    if principal.role is not Role.TEAM or principal.team_id is None:
        raise PermissionDenied("a team token is required", reason="TEAM_TOKEN_REQUIRED")
    return principal.team_id


def set_principal(principal: Principal) -> contextvars.Token[Principal]:
    return _current.set(principal)


def reset_principal(token: contextvars.Token[Principal]) -> None:
    _current.reset(token)


def bearer_token(metadata: tuple[tuple[str, str | bytes], ...] | None) -> str:
    for key, value in metadata or ():
        if key == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            break
    raise Unauthenticated(
        "missing or malformed `authorization: Bearer <token>` metadata",
        reason="MISSING_CREDENTIALS",
    )


LookupFn = Callable[[bytes], Awaitable[Principal | None]]


class TokenCache:
    """Resolves tokens through ``lookup``, remembering answers briefly.

    A revoked token keeps working for at most ``ttl`` seconds: the price of not hitting the
    database on every call.
    """

    def __init__(
        self, lookup: LookupFn, ttl: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._lookup = lookup
        self._ttl = ttl
        self._clock = clock
        self._entries: dict[bytes, tuple[float, Principal | None]] = {}

    async def resolve(self, token: str) -> Principal:
        digest = token_digest(token)
        now = self._clock()
        cached = self._entries.get(digest)
        if cached is not None and cached[0] > now:
            principal = cached[1]
        else:
            principal = await self._lookup(digest)
            if len(self._entries) > 10_000:
                self._entries.clear()
            self._entries[digest] = (now + self._ttl, principal)
        if principal is None:
            raise Unauthenticated("unknown or revoked token", reason="INVALID_TOKEN")
        return principal
