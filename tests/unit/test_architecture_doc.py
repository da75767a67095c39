"""docs/architecture.md and docs/operations.md point at code that exists: every file path they
name, every test they cite as ``file::function`` (or ``::function`` after one), and every named
SQL query."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "docs" / "architecture.md", REPO / "docs" / "operations.md"]
# The short prefixes docs/architecture.md uses for the two libraries.
PREFIXES = {"core/": "libs/core/duetime_core/", "infra/": "libs/infra/duetime_infra/"}
PATH = re.compile(r"`((?:libs|services|tests|core|infra)/[\w/.]+\.(?:py|sql))(?:::(\w+))?`")
LATER_TEST = re.compile(r"`::(test_\w+)`")
QUERIES = REPO / "libs" / "infra" / "duetime_infra" / "pg" / "queries"


def resolve(path: str) -> Path:
    for short, full in PREFIXES.items():
        if path.startswith(short):
            return REPO / (full + path[len(short) :])
    return REPO / path


def test_every_named_file_and_test_exists() -> None:
    problems = []
    for doc in DOCS:
        last: Path | None = None  # the file a later ``::function`` belongs to
        for match in re.finditer(rf"{PATH.pattern}|{LATER_TEST.pattern}", doc.read_text()):
            path, function, later = match.group(1), match.group(2), match.group(3)
            if path:
                last = resolve(path)
                if not last.is_file():
                    problems.append(f"{doc.name}: no file {path}")
                    last = None
                    continue
            name = function or later
            if name and last is None:
                problems.append(f"{doc.name}: ::{name} follows no file")
            elif name and last and f"def {name}(" not in last.read_text():
                problems.append(f"{doc.name}: no {name} in {last.relative_to(REPO)}")
    assert not problems, "\n".join(problems)
    assert "tests/e2e/test_end_to_end.py" in DOCS[0].read_text()


def test_every_named_query_exists() -> None:
    defined = set()
    for sql in QUERIES.glob("*.sql"):
        defined.update(re.findall(r"^-- name: (\w+)", sql.read_text(), re.M))
    cited = {
        name
        for name in re.findall(r"`([a-z]+(?:_[a-z]+)+)`", DOCS[0].read_text())
        if name.split("_")[0] in {"claim", "relay", "attempt", "reaper", "retry", "fence"}
    }
    assert cited, "the architecture names no queries"
    assert not cited - defined, f"no such named queries: {sorted(cited - defined)}"
