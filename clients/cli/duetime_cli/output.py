"""What a command prints: a rich table for people by default, or the response's proto3 JSON
(as JSON or YAML) for scripts. Results go to stdout; progress and errors to stderr."""

from __future__ import annotations

import enum
import json
import os
import sys
from collections.abc import Callable, Iterable
from typing import Annotated, Any

import typer
import yaml
from google.protobuf import json_format
from google.protobuf.message import Message
from rich.console import Console, RenderableType
from rich.text import Text

from duetime_cli.failures import Failure


class Format(enum.StrEnum):
    TABLE = "table"
    JSON = "json"
    YAML = "yaml"


OutputOption = Annotated[
    Format,
    typer.Option(
        "--output",
        "-o",
        help="table for people; json or yaml: the response as proto3 JSON, for scripts.",
    ),
]

# Piped into a file or grep, tables keep their natural width instead of wrapping at 80
# columns; a terminal (or COLUMNS) sets the width as usual.
_PIPED_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 1000
# Names, URLs and errors are shown as they are: no rich markup ("[prod]"), emoji codes or
# highlighting is read into them.
stdout = Console(width=_PIPED_WIDTH, markup=False, emoji=False, highlight=False)
stderr = Console(stderr=True, markup=False, emoji=False, highlight=False)


def as_dict(message: Message) -> dict[str, Any]:
    """A message in proto3 JSON form (camelCase names, enums by name, RFC 3339 times)."""
    return json_format.MessageToDict(message)


def dumps(data: dict[str, Any], fmt: Format) -> str:
    if fmt is Format.YAML:
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def emit(response: Message, fmt: Format, table: Callable[[], Iterable[RenderableType]]) -> None:
    """Prints ``response`` as ``fmt``; ``table`` builds what people see."""
    if fmt is Format.TABLE:
        for renderable in table():
            stdout.print(renderable, crop=False)  # a long id stays whole, for the terminal to wrap
    else:
        sys.stdout.write(dumps(as_dict(response), fmt))
        sys.stdout.flush()


def emit_failure(failure: Failure, fmt: Format) -> None:
    if fmt is Format.TABLE:
        first, *rest = failure.human_lines()
        stderr.print(Text.assemble(("Error: ", "bold red"), first), soft_wrap=True)
        for line in rest:
            stderr.print(Text(line), soft_wrap=True)
    else:
        sys.stderr.write(dumps(failure.as_dict(), fmt))
