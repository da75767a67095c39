"""docs/clients.md shows the code the client programs run: every `<!-- snippet: FILE#NAME -->`
is followed by a code block equal to the region between `docs:begin NAME` and `docs:end NAME`
in FILE, and every region of the programs is shown."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "clients.md"
SNIPPET = re.compile(r"<!-- snippet: (\S+)#(\S+) -->\n```\w*\n(.*?)```\n", re.S)
SKIP = {"node_modules", "dist", "target", "gen"}
SOURCES = {".go", ".ts", ".java", ".yaml", ".xml", ".py"}
# A region is marked by `// docs:begin NAME` (Go, TypeScript, Java), `# docs:begin NAME` (YAML,
# Python) or `<!-- docs:begin NAME -->` (XML) and the matching `docs:end` line.
REGION = re.compile(
    r"^[ \t]*(//|#|<!--) docs:begin (\S+)(?: -->)?\n(.*?)^[ \t]*\1 docs:end \2(?: -->)?\n",
    re.S | re.M,
)


def regions(path: Path) -> dict[str, str]:
    """The file's marked regions, dedented, without leading or trailing blank lines."""
    return {
        name: textwrap.dedent(body).strip("\n") + "\n"
        for _, name, body in REGION.findall(path.read_text())
    }


def test_doc_snippets_are_the_programs_code() -> None:
    shown: set[tuple[str, str]] = set()
    for file, name, block in SNIPPET.findall(DOC.read_text()):
        found = regions(REPO / file)
        assert name in found, f"{file} has no region {name}"
        assert block == found[name], f"docs/clients.md's {file}#{name} differs from the code"
        shown.add((file, name))
    assert shown
    for path in program_files():
        file = str(path.relative_to(REPO))
        for name in regions(path):
            assert (file, name) in shown, f"{file}#{name} is not shown in docs/clients.md"


def program_files() -> list[Path]:
    """The client programs' sources and generation templates, without dependencies, generated
    code and build output."""
    found: list[Path] = []
    for directory, subdirectories, files in os.walk(REPO / "clients"):
        subdirectories[:] = [d for d in subdirectories if d not in SKIP]
        found += [Path(directory, f) for f in files if Path(f).suffix in SOURCES]
    return found
