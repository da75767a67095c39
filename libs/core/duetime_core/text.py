"""Free text that users and operators give (display names, descriptions): the one rule for
what may be stored and shown."""

from __future__ import annotations

import unicodedata


def text_problem(text: str, limit: int) -> str | None:
    """Why ``text`` cannot be stored as a name or description (None: it can): too long, or
    holding control characters (newlines, tabs, NUL: PostgreSQL refuses NUL in text)."""
    if len(text) > limit:
        return f"at most {limit} characters, got {len(text)}"
    if any(unicodedata.category(c) == "Cc" for c in text):
        return "must not contain control characters (newlines, tabs, NUL, ...)"
    return None
