"""``duetime`` in a real terminal: tmux runs a shell script in a pane of a given size, and the
test reads the screen back (capture-pane) as a person sees it, or types at it (send-keys)."""

from __future__ import annotations

import asyncio
import itertools
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Terminal:
    socket: Path

    async def tmux(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        process = await asyncio.create_subprocess_exec(
            "tmux", "-S", str(self.socket), *args, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode == 0, f"tmux {' '.join(args)}: {out.decode()}"
        return out.decode()

    async def start(
        self, script: str, env: Mapping[str, str], width: int, height: int = 50
    ) -> None:
        """Runs ``script`` (sh) in a new pane of ``width`` columns. When it ends, the pane
        prints a blank line and ``exit N`` (its status), says so (``finished``) and stays open
        to be read. Ctrl-C reaches the command the script runs, and the script goes on, as in a
        person's shell."""
        ended = 's=$?; printf "\\nexit %s\\n" $s; tmux wait-for -S done; exec cat'
        wrapped = f"trap : INT; {script}; {ended}"
        env = {**env, "TERM": "xterm-256color"}
        await self.tmux("new-session", "-d", "-x", str(width), "-y", str(height), wrapped, env=env)

    async def finished(self) -> list[str]:
        """The screen once the script has ended."""
        await self.tmux("wait-for", "done")
        return await self.screen()

    async def screen(self) -> list[str]:
        """Every line the pane has shown (from its scrollback on), a line the terminal wrapped
        joined again, without trailing blanks."""
        out = await self.tmux("capture-pane", "-p", "-J", "-S", "-")
        return [line.rstrip() for line in out.rstrip("\n").splitlines()]

    async def colours(self) -> str:
        """The screen as it is, with the escape sequences of its colours."""
        return await self.tmux("capture-pane", "-p", "-e")

    async def keys(self, *keys: str) -> None:
        await self.tmux("send-keys", *keys)


@asynccontextmanager
async def terminal() -> AsyncIterator[Terminal]:
    """A tmux server of its own, killed at the end."""
    assert shutil.which("tmux"), "tmux is missing: run scripts/tools"
    # A socket's path is limited to ~100 bytes: a test's own tmp_path may be longer.
    with tempfile.TemporaryDirectory(prefix="tmux-") as directory:
        term = Terminal(Path(directory) / "socket")
        try:
            yield term
        finally:
            if term.socket.exists():
                await term.tmux("kill-server")


def screen_table(lines: list[str], first_column: str) -> tuple[list[str], list[dict[str, str]]]:
    """The list table on a screen whose heading starts with ``first_column``: its headings,
    which must take one line over the table's rule (a heading never wraps), and its rows by
    heading, each cell's wrapped lines joined by a space."""
    start = next(i for i, line in enumerate(lines) if line.startswith(first_column))
    assert set(lines[start + 1]) == {"─"}, lines[start : start + 2]
    found = list(re.finditer(r"\S+(?: \S+)*", lines[start]))
    heads = [m[0] for m in found]
    bounds = [m.start() for m in found] + [None]
    rows: list[dict[str, str]] = []
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        cells = [line[a:b].strip() for a, b in itertools.pairwise(bounds)]
        if cells[0]:
            rows.append(dict(zip(heads, cells, strict=True)))
            continue
        for head, cell in zip(heads, cells, strict=True):
            if cell:
                rows[-1][head] = f"{rows[-1][head]} {cell}".strip()
    return heads, rows


def screen_detail(lines: list[str], first_key: str) -> dict[str, str]:
    """The detail grid on a screen that starts with ``first_key``: its values by key, a value's
    wrapped lines joined by a space."""
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{first_key} "))
    rows: dict[str, str] = {}
    key = ""
    for line in lines[start:]:
        match = re.match(r"^(\S.*?)(?:\s{2,}(.*))?$", line)
        if match:
            key = match[1]
            rows[key] = (match[2] or "").strip()
        elif line.strip() and key:
            rows[key] = f"{rows[key]} {line.strip()}"
        else:
            break
    return rows
