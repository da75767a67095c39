"""Named SQL queries, kept in ``queries/*.sql`` and loaded once.

A file holds blocks introduced by ``-- name: <query_name>``; the text up to the next such line
is the query. Names are unique across files.

The query is sent as ``/* <query_name> */ <SQL>``, its leading ``--`` comments left out: the
name shows in ``pg_stat_activity``, and the asyncpg instrumentation, which skips a leading
``/* */`` comment, names each span after the statement (SELECT, INSERT, ...) rather than "--".

A query that locks its rows ``SKIP LOCKED`` (a pass that never waits) is also sent, by
``waiting``, as the same text without it, named ``<query_name>_waiting``: one text for both, so
their column lists cannot drift apart.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
_LEADING_COMMENTS = re.compile(r"\A(?:\s*--[^\n]*(?:\n|\Z))+")


@cache
def queries() -> dict[str, str]:
    found: dict[str, str] = {}
    for entry in resources.files("duetime_infra.pg.queries").iterdir():
        if not entry.name.endswith(".sql"):
            continue
        text = entry.read_text(encoding="utf-8")
        parts = _NAME.split(text)
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            if name in found:
                raise RuntimeError(f"query {name!r} defined twice")
            found[name] = f"/* {name} */ " + _LEADING_COMMENTS.sub("", body).strip()
    return found


def q(name: str) -> str:
    return queries()[name]


_SKIP_LOCKED = " SKIP LOCKED;"


@cache
def waiting(name: str) -> str:
    """The query ``name``, which ends ``SKIP LOCKED``, waiting for the rows other transactions
    hold instead of leaving them out."""
    text = q(name)
    body = text.removeprefix(f"/* {name} */").removesuffix(_SKIP_LOCKED)
    if not text.endswith(_SKIP_LOCKED) or "SKIP LOCKED" in body:
        raise ValueError(f"query {name!r} must say SKIP LOCKED once, at its end")
    return f"/* {name}_waiting */{body};"
