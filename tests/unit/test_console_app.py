"""The console's app around its pages, driven through ASGI without a server: the session cookie
read among other applications' cookies, and errors on paths served without a session."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from duetime_console.api import Api
from duetime_console.app import build_app
from duetime_console.session import COOKIE, Session, SessionSealer
from duetime_infra.secrets.keyring import new_keyring


async def request(
    sealer: SessionSealer, method: str, path: str, cookie: str = ""
) -> tuple[int, dict[str, list[str]], bytes]:
    """The status, headers and body the app answers (the API is never called here)."""
    app = build_app(Api("127.0.0.1:9", None), sealer)
    headers = [(b"cookie", cookie.encode("latin-1"))] if cookie else []
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": headers,
        "server": ("127.0.0.1", 8443),
        "client": ("127.0.0.1", 5000),
        "root_path": "",
    }
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> MutableMapping[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    answer: dict[str, list[str]] = {}
    for name, value in start["headers"]:
        answer.setdefault(name.decode(), []).append(value.decode())
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], answer, body


async def test_the_session_cookie_is_read_among_cookies_the_stdlib_cannot_parse() -> None:
    sealer = SessionSealer(new_keyring("s1"), lifetime_seconds=3600)
    sealed = sealer.seal(Session())
    for others in ('theme="dark', 'pref={"a":1}', "lang=en US"):
        status, headers, _ = await request(sealer, "GET", "/signin", f"{others}; {COOKIE}={sealed}")
        assert status == 200
        # The session was opened: no new one (and cookie) replaces it.
        assert "set-cookie" not in headers, others


async def test_errors_on_paths_without_a_session_are_plain_not_500() -> None:
    sealer = SessionSealer(new_keyring("s1"), lifetime_seconds=3600)
    status, _, body = await request(sealer, "GET", "/static/nope.js")
    assert status == 404, body
    status, _, body = await request(sealer, "POST", "/healthz")
    assert status == 405, body
