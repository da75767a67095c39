"""The shell commands a page of docs/ shows, for tests that run or check what the docs tell
readers to type."""

from __future__ import annotations

import re

from testkit.processes import REPO


def shell_commands(page: str) -> list[str]:
    """The commands of docs/PAGE's ```sh blocks, in order: continuation lines joined, comments
    and blank lines dropped."""
    text = (REPO / "docs" / page).read_text()
    blocks = re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)
    joined = "\n".join(blocks).replace("\\\n", " ")
    return [line.split(" #", 1)[0].strip() for line in joined.splitlines() if line.strip()]
