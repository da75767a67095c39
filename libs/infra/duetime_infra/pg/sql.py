"""Named SQL queries, kept in ``queries/*.sql`` and loaded once.

A file holds blocks introduced by ``-- name: <query_name>``; the text up to the next such line
is the query. Names are unique across files.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


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
            found[name] = body.strip()
    return found


def q(name: str) -> str:
    return queries()[name]
