"""Named SQL queries, kept in ``queries/*.sql`` and loaded once.

A file holds blocks introduced by ``-- name: <query_name>``; the text up to the next such line
is the query. Names are unique across files.

The query is sent as ``/* <query_name> */ <SQL>``, its leading ``--`` comments left out: the
name shows in ``pg_stat_activity``, and the asyncpg instrumentation, which skips a leading
``/* */`` comment, names each span after the statement (SELECT, INSERT, ...) rather than "--".
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
