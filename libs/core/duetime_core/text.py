"""Free text that users and operators give (display names, descriptions): the one rule for
what may be stored and shown."""

from __future__ import annotations

import unicodedata
from datetime import timedelta


def text_problem(text: str, limit: int) -> str | None:
    """Why ``text`` cannot be stored as a name or description (None: it can): too long, or
    holding control characters (newlines, tabs, NUL: PostgreSQL refuses NUL in text)."""
    if len(text) > limit:
        return f"at most {limit} characters, got {len(text)}"
    if any(unicodedata.category(c) == "Cc" for c in text):
        return "must not contain control characters (newlines, tabs, NUL, ...)"
    return None


def rounded_span(td: timedelta) -> str:
    """A duration in a sentence, to the second (to the millisecond under a minute):
    ``2h3m4s``, ``4.25s``."""
    if td < timedelta(0):
        return "-" + rounded_span(-td)
    if td < timedelta(minutes=1):
        return f"{round(td.total_seconds(), 3):g}s"
    seconds = round(td.total_seconds())
    days, seconds = divmod(seconds, 86_400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    parts = ((days, "d"), (hours, "h"), (minutes, "m"), (seconds, "s"))
    return "".join(f"{n}{unit}" for n, unit in parts if n)
