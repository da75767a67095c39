"""Job labels: the rules for their keys and values (as Google Cloud's labels have them), so a
label reads the same in a filter, a URL and a metric."""

from __future__ import annotations

import re
from collections.abc import Mapping

MAX_LABELS = 64
_KEY = re.compile(r"[a-z][a-z0-9_-]{0,62}")
_VALUE = re.compile(r"[a-z0-9_-]{0,63}")


def valid_label_key(key: str) -> bool:
    return _KEY.fullmatch(key) is not None


def label_problems(labels: Mapping[str, str]) -> list[tuple[str, str]]:
    """(the label's key or "", what is wrong) for every bad label, none for good ones."""
    problems: list[tuple[str, str]] = []
    if len(labels) > MAX_LABELS:
        problems.append(("", f"at most {MAX_LABELS} labels, not {len(labels)}"))
    for key, value in sorted(labels.items()):
        if not valid_label_key(key):
            problems.append(
                (key, "a key is 1 to 63 lowercase letters, digits, _ or -, starting with a letter")
            )
        if _VALUE.fullmatch(value) is None:
            problems.append((key, "a value is up to 63 lowercase letters, digits, _ or -"))
    return problems
