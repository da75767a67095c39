"""docs/operations.md names every DUETIME_* variable the code reads or sets, and no other.

A variable is any ``DUETIME_<NAME>`` in the Python sources of libs/ and services/ (settings read
with the EnvReader, the ports services print, what a container task is given). The CLI's own
variables (clients/cli) may be named too; a documented name found nowhere in the code is stale.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "operations.md"
NAME = re.compile(r"\bDUETIME_[A-Z0-9_]*[A-Z0-9]\b")


def names_in_code(*folders: str) -> set[str]:
    found: set[str] = set()
    for folder in folders:
        for path in (REPO / folder).rglob("*.py"):
            found.update(NAME.findall(path.read_text()))
    return found


def names_in_doc() -> set[str]:
    return set(re.findall(r"`(DUETIME_[A-Z0-9_]*[A-Z0-9])(?:=[^`]*)?`", DOC.read_text()))


def test_every_variable_the_services_use_is_documented() -> None:
    used = names_in_code("libs", "services")
    # The reader must see the settings it exists for, or this test checks nothing.
    assert {"DUETIME_PG_DSN", "DUETIME_ATTEMPT_LEASE", "DUETIME_PODMAN_CPUS"} <= used
    missing = sorted(used - names_in_doc())
    assert not missing, f"docs/operations.md does not document {', '.join(missing)}"


def test_every_documented_variable_exists() -> None:
    stale = sorted(names_in_doc() - names_in_code("libs", "services", "clients/cli"))
    assert not stale, f"docs/operations.md documents variables no code reads: {', '.join(stale)}"
