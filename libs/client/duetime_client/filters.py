"""AIP-160 filters (ListJobs, ListRuns, the batch calls) put together from what people type in
fields and options: a value quoted whatever it holds, a label as a restriction, restrictions
ANDed. The server parses them and names the token at fault; nothing here checks more than
keeps a typed value from changing the filter's shape."""

from __future__ import annotations

from collections.abc import Iterable

LABEL_FORMS = "key=value, or a key alone: it has the label"


def quoted(text: str) -> str:
    """``text`` as an AIP-160 string, whatever it holds."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def label_restriction(text: str) -> str:
    """``env=prod`` as ``labels.env = "prod"``; ``env`` alone as ``labels.env:*`` (the job has
    the label). ValueError for a key that is not one word of letters, digits, ``_`` and ``-``
    (the server names a key that breaks its finer rules)."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not key or not key.replace("-", "").replace("_", "").isalnum():
        raise ValueError(LABEL_FORMS)
    return f"labels.{key} = {quoted(value.strip())}" if sep else f"labels.{key}:*"


def all_of(parts: Iterable[str]) -> str:
    """The restrictions ANDed, empty ones left out; one holding ``OR`` in parentheses, for
    the reader (AND binds loosest in AIP-160)."""
    return " AND ".join(f"({p})" if " OR " in p else p for p in parts if p)
