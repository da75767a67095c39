"""The options that narrow a list or a batch to what a person means (``--filter``, ``--label``,
``--since``, ``--until``), put together into the one AIP-160 filter the API reads
(``duetime_client.filters``); and a bad filter's error told with the filter that was sent
when the command put it together, so that the column the server names can be found."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated

import grpc
import typer

from duetime_cli.commands import moment_value
from duetime_cli.failures import Failure
from duetime_client.filters import all_of, label_restriction, quoted

FilterOption = Annotated[
    str,
    typer.Option(
        "--filter",
        metavar="FILTER",
        help="Only those that match this filter, in AIP-160's syntax (docs/cli.md lists the "
        "fields), ANDed with the other options.",
        show_default=False,
    ),
]
LabelOption = Annotated[
    list[str] | None,
    typer.Option(
        "--label",
        metavar="KEY[=VALUE]",
        help="Only jobs with this label (a key alone: jobs that have it); repeat it for jobs "
        "with all of them.",
        show_default=False,
    ),
]
_TIME_FORMS = "an RFC 3339 instant (2026-12-06T09:00:00Z) or a duration ago (90m, 2d)"
SinceOption = Annotated[
    str | None,
    typer.Option(metavar="TIME", help=f"Only runs scheduled at or after TIME: {_TIME_FORMS}."),
]
UntilOption = Annotated[
    str | None,
    typer.Option(metavar="TIME", help=f"Only runs scheduled before TIME: {_TIME_FORMS}."),
]


@dataclass(frozen=True)
class Filter:
    """The filter a command sends; ``composed`` when options were added to ``--filter``."""

    text: str
    composed: bool = False

    def __bool__(self) -> bool:
        return bool(self.text)

    @contextmanager
    def sent(self) -> Iterator[None]:
        """The calls inside send this filter: an error that names it says what was sent, when
        the command put it together."""
        try:
            yield
        except grpc.RpcError as error:
            failure = Failure.from_rpc_error(error)
            if not self.composed or all(v.field != "filter" for v in failure.violations):
                raise
            failure.hint = f"the filter sent: {self.text}"
            raise failure from None


def _compose(typed: str, restrictions: Sequence[str]) -> Filter:
    """The restrictions the options make, then ``--filter`` (in parentheses); ``--filter``
    alone is sent as typed."""
    typed = typed.strip()
    if not restrictions:
        return Filter(typed)
    text = all_of(restrictions) + (f" AND ({typed})" if typed else "")
    return Filter(text, composed=True)


def job_filter(typed: str, labels: Sequence[str] | None) -> Filter:
    """``--filter`` with each ``--label``; a usage error names a label that is not one."""
    restrictions = []
    for label in labels or ():
        try:
            restrictions.append(label_restriction(label))
        except ValueError as error:
            raise typer.BadParameter(f"{label!r}: {error}", param_hint="--label") from None
    return _compose(typed, restrictions)


def run_filter(typed: str, since: str | None, until: str | None) -> Filter:
    """``--filter`` with the scheduled (nominal) time from ``--since`` and before
    ``--until``."""
    now = datetime.now(UTC)
    restrictions = []
    for text, option, op in ((since, "--since", ">="), (until, "--until", "<")):
        if text is not None:
            moment = moment_value(text, option, now).ToJsonString()
            restrictions.append(f"nominal_time {op} {quoted(moment)}")
    return _compose(typed, restrictions)
