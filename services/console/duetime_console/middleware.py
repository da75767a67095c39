"""The layers around every request: the session opened from its cookie and sealed back when
it changed, the security headers, and one JSON access-log line (method, path without the
query, status, time): never a header, a form or a cookie, so never a token."""

from __future__ import annotations

import logging
import time

from starlette.datastructures import MutableHeaders
from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from duetime_console.session import COOKIE, Session, SessionSealer

log = logging.getLogger("duetime_console.access")

# Scripts and styles from this site only (htmx and the console's own script are files in
# /static): an injected inline script does not run. No framing, no referrer leaving the site.
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "strict-transport-security": "max-age=31536000",
}


# Paths that never need a session (and get no cookie): the probes' page.
SESSIONLESS = frozenset({"/healthz"})


class SessionMiddleware:
    """Opens the session cookie into ``request.state.session`` (a new anonymous session with a
    CSRF token of its own when there is none), and sets the cookie again when a handler
    replaced the session."""

    def __init__(self, app: ASGIApp, sealer: SessionSealer) -> None:
        self.app = app
        self.sealer = sealer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["path"] in SESSIONLESS
            or scope["path"].startswith("/static/")
        ):
            await self.app(scope, receive, send)
            return
        opened = self._open(scope)
        state = scope.setdefault("state", {})
        state["session"] = opened or Session()
        original = state["session"] if opened is not None else None

        async def sealing_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                current: Session = state["session"]
                if current is not original:
                    headers = MutableHeaders(scope=message)
                    headers.append("set-cookie", self._cookie(current))
            await send(message)

        await self.app(scope, receive, sealing_send)

    def _open(self, scope: Scope) -> Session | None:
        # Starlette's lenient parser: another application's cookie that the standard library's
        # strict one cannot read (a quote, a space, JSON) must not hide the session's.
        for name, value in scope["headers"]:
            if name == b"cookie":
                sealed = cookie_parser(value.decode("latin-1")).get(COOKIE)
                if sealed:
                    return self.sealer.open(sealed)
        return None

    def _cookie(self, session: Session) -> str:
        lifetime = int(self.sealer.lifetime_seconds)
        return (
            f"{COOKIE}={self.sealer.seal(session)}; Path=/; Max-Age={lifetime}; "
            "Secure; HttpOnly; SameSite=Strict"
        )


class HeadersAndLogMiddleware:
    """Adds the security headers (and no caching: pages show a team's data) and logs one
    line per request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def headed_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
                if not scope["path"].startswith("/static/"):
                    headers.setdefault("cache-control", "no-store")
            await send(message)

        try:
            await self.app(scope, receive, headed_send)
        finally:
            log.info(
                "request",
                extra={
                    "action": "http",
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": status,
                    "ms": round((time.perf_counter() - started) * 1000, 1),
                },
            )
