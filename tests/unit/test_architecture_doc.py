"""docs/architecture.md and docs/operations.md point at code that exists: every file path they
name, every test they cite as ``file::function`` (or ``::function`` after one), and every named
SQL query. In every page of docs/, a name said to be in a file is defined there, and a figure
that names its constant (``8 s (`EARLY_AHEAD`)``) is the constant's value."""

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
MIGRATIONS = REPO / "libs" / "infra" / "duetime_infra" / "pg" / "migrations"


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
    tables = set()  # a table may be named like a query (claim_tokens)
    for sql in MIGRATIONS.glob("*.sql"):
        tables.update(re.findall(r"^CREATE TABLE (\w+)", sql.read_text(), re.M))
    cited = {
        name
        for name in re.findall(r"`([a-z]+(?:_[a-z]+)+)`", DOCS[0].read_text())
        if name.split("_")[0] in {"claim", "relay", "attempt", "reaper", "retry", "fence"}
        and name not in tables
    }
    assert cited, "the architecture names no queries"
    assert not cited - defined, f"no such named queries: {sorted(cited - defined)}"


# A name placed in a file: "`name` in `file`" or "(`name`, `file`)". Settings (DUETIME_*) are
# checked by test_operations_doc.py.
PLACED = re.compile(r"`(\w+)`(?: in|,) `([\w/]+\.(?:py|sql))`")
# "8 s ahead (`EARLY_AHEAD` ...)": a figure in seconds and the constant that holds it.
FIGURE = re.compile(r"(\d+(?:\.\d+)?) s\b[^.;|`]{0,40}`([A-Z][A-Z0-9_]{2,})`")
SOURCES = ("libs", "services")


def source_file(path: str) -> Path | None:
    """The file a doc's path names: in full, with a short prefix, or by its tail (`claims.sql`,
    `pg/migrate.py`) when exactly one source file ends so."""
    if resolve(path).is_file():
        return resolve(path)
    found = [
        p for top in SOURCES for p in (REPO / top).rglob("*") if p.as_posix().endswith(f"/{path}")
    ]
    return found[0] if len(found) == 1 else None


def defines(source: Path, name: str) -> bool:
    """A def, class or module-level name of a Python file; a named query, index, table, view,
    function, trigger or constraint of an SQL file."""
    if source.suffix == ".py":
        pattern = rf"^\s*(?:(?:async\s+)?def|class)\s+{name}\b|^\s*{name}\s*(?::[^=\n]*)?="
        return re.search(pattern, source.read_text(), re.M) is not None
    kinds = r"\b(?:INDEX|TABLE|VIEW|FUNCTION|TRIGGER|CONSTRAINT)\s+(?:IF NOT EXISTS\s+)?"
    pattern = rf"^-- name: {name}\b|{kinds}{name}\b"
    return re.search(pattern, source.read_text(), re.M | re.I) is not None


def test_every_name_said_to_be_in_a_file_is_defined_there() -> None:
    problems, checked = [], 0
    for doc in sorted((REPO / "docs").glob("*.md")):
        for name, path in PLACED.findall(doc.read_text()):
            if name.startswith("DUETIME_"):
                continue
            source = source_file(path)
            checked += 1
            if source is None:
                problems.append(f"{doc.name}: no single file {path}")
            elif not defines(source, name):
                problems.append(f"{doc.name}: {name} is not defined in {path}")
    assert not problems, "\n".join(problems)
    assert checked > 10, "the docs place no names in files: the pattern is stale"


def test_every_figure_that_names_its_constant_agrees_with_it() -> None:
    values: dict[str, set[float]] = {}
    for top in SOURCES:
        for source in (REPO / top).rglob("*.py"):
            for name, value in re.findall(
                r"^([A-Z][A-Z0-9_]+) = (\d+(?:\.\d+)?)$", source.read_text(), re.M
            ):
                values.setdefault(name, set()).add(float(value))
    problems, checked = [], 0
    for doc in sorted((REPO / "docs").glob("*.md")):
        for figure, name in FIGURE.findall(doc.read_text()):
            checked += 1
            if values.get(name) != {float(figure)}:
                problems.append(
                    f"{doc.name}: {figure} s for {name}, the code has {values.get(name)}"
                )
    assert not problems, "\n".join(problems)
    assert checked >= 3, "no figure names its constant: the pattern is stale"
