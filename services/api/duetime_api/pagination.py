"""Opaque page tokens, bound to the filter they were issued for."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from datetime import datetime

from duetime_core.errors import InvalidArgument
from duetime_infra.pg.jobs.reads import Page

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000


def _filter_digest(scope: str) -> str:
    return hashlib.sha256(scope.encode()).hexdigest()[:16]


def make_token(scope: str, last_time: datetime, last_id: uuid.UUID) -> str:
    body = {"f": _filter_digest(scope), "t": last_time.isoformat(), "i": str(last_id)}
    return base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")


def _page_size(page_size: int) -> int:
    if page_size < 0 or page_size > MAX_PAGE_SIZE:
        raise InvalidArgument.field("page_size", f"must be between 0 and {MAX_PAGE_SIZE}")
    return page_size or DEFAULT_PAGE_SIZE


def make_key_token(scope: str, last_key: str) -> str:
    """A page token for a listing in key order (teams by id)."""
    body = {"f": _filter_digest(scope), "k": last_key}
    return base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")


def read_key_page(scope: str, page_size: int, token: str) -> tuple[str | None, int]:
    """The key to list after (None: from the start) and how many, for ``make_key_token``."""
    limit = _page_size(page_size)
    if not token:
        return None, limit
    try:
        body = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        digest, after = body["f"], body["k"]
    except (ValueError, KeyError, TypeError):
        raise InvalidArgument.field("page_token", "not a page token issued by this API") from None
    if digest != _filter_digest(scope) or not isinstance(after, str):
        raise InvalidArgument.field(
            "page_token", "issued for a different listing or filter; start again without it"
        )
    return after, limit


def read_page(scope: str, page_size: int, token: str) -> Page:
    """``scope`` names the listing and its filter; a token from another scope is refused."""
    violations = []
    if page_size < 0 or page_size > MAX_PAGE_SIZE:
        violations.append(("page_size", f"must be between 0 and {MAX_PAGE_SIZE}"))
    limit = page_size or DEFAULT_PAGE_SIZE
    if not token:
        if violations:
            raise InvalidArgument.field(*violations[0])
        return Page(None, None, min(limit, MAX_PAGE_SIZE))
    try:
        body = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        digest, after_time, after_id = (
            body["f"],
            datetime.fromisoformat(body["t"]),
            uuid.UUID(body["i"]),
        )
    except (ValueError, KeyError, TypeError):
        raise InvalidArgument.field("page_token", "not a page token issued by this API") from None
    if digest != _filter_digest(scope):
        raise InvalidArgument.field(
            "page_token", "issued for a different listing or filter; start again without it"
        )
    if violations:
        raise InvalidArgument.field(*violations[0])
    return Page(after_time, after_id, limit)
