"""What every command shares: its session, turning failures into messages and exit codes, and
the arguments several commands take."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import grpc
import typer
from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

from duetime_cli.exits import ExitCode
from duetime_cli.failures import Failure
from duetime_cli.output import Format, emit_failure
from duetime_cli.session import Session
from duetime_client.describe import parse_duration

if TYPE_CHECKING:
    # The generic form mypy-protobuf's enum wrappers derive from; typing only.
    from google.protobuf.internal.enum_type_wrapper import _EnumTypeWrapper

JobArg = Annotated[
    str,
    typer.Argument(metavar="JOB", help="The job: its id, or its name teams/{team}/jobs/{job_id}."),
]
EtagOption = Annotated[
    str,
    typer.Option(
        metavar="ETAG", help="Only if the job is still at this etag (else ABORTED, exit 5)."
    ),
]
LimitOption = Annotated[
    int, typer.Option(min=0, metavar="N", help="At most this many (0: all), newest first.")
]
PAGE_SIZE = 1000
T = TypeVar("T")
V = TypeVar("V", bound=int)


@contextmanager
def command(ctx: typer.Context, fmt: Format) -> Iterator[Session]:
    """The command's session; a failure inside is printed (as ``fmt`` asks) and ends the
    command with its exit code."""
    session: Session = ctx.obj
    try:
        yield session
    except grpc.RpcError as error:
        failure = Failure.from_rpc_error(error)
        emit_failure(failure, fmt)
        raise typer.Exit(failure.exit_code) from None
    except Failure as failure:
        emit_failure(failure, fmt)
        raise typer.Exit(failure.exit_code) from None
    finally:
        session.close()


def usage_error(message: str) -> Failure:
    """A command line whose arguments do not go together (exit 2)."""
    return Failure.local(ExitCode.USAGE, "INVALID_ARGUMENT", message)


def collect(
    fetch: Callable[[str, int], tuple[Sequence[T], str]], limit: int
) -> tuple[list[T], str]:
    """Pages through a list until ``limit`` items (0: all); the items and the token left."""
    items: list[T] = []
    token = ""
    while True:
        size = PAGE_SIZE if not limit else min(PAGE_SIZE, limit - len(items))
        page, token = fetch(token, size)
        items.extend(page)
        if not token or (limit and len(items) >= limit):
            return items, token


def enum_choices(enum_type: _EnumTypeWrapper[Any], prefix: str) -> list[str]:
    """A contract enum's values without prefix and zero value: ``RUN_STATE_QUEUED`` as
    ``QUEUED``; what an option naming one accepts (and completes)."""
    return [name.removeprefix(prefix) for name in enum_type.keys()[1:]]


def enum_option(
    enum_type: _EnumTypeWrapper[Any], prefix: str, help: str, metavar: str = "STATE"
) -> Any:
    """An option naming a value of a contract enum, listing and completing its values."""
    choices = enum_choices(enum_type, prefix)

    def complete(incomplete: str) -> list[str]:
        return [c for c in choices if c.startswith(incomplete.upper())]

    return typer.Option(
        metavar=metavar, help=f"{help}: {', '.join(choices)}.", autocompletion=complete
    )


def enum_value(enum_type: _EnumTypeWrapper[V], prefix: str, text: str | None, option: str) -> V:
    """The value an option names (any case), the zero value when not given; a usage error
    otherwise."""
    if text is None:
        return enum_type.Value(enum_type.keys()[0])
    choices = enum_choices(enum_type, prefix)
    if text.upper() not in choices:
        raise typer.BadParameter(f"expected one of {', '.join(choices)}", param_hint=option)
    return enum_type.Value(prefix + text.upper())


def duration_value(text: str, option: str) -> Duration:
    """A duration as the CLI prints them (``describe.parse_duration``); a usage error
    otherwise."""
    try:
        return parse_duration(text)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint=option) from None


def instant_value(text: str, option: str) -> Timestamp:
    """An RFC 3339 instant with its offset; a usage error otherwise."""
    stamp = Timestamp()
    try:
        stamp.FromJsonString(text)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not an RFC 3339 instant like 2026-11-01T05:30:00Z", param_hint=option
        ) from None
    return stamp


def moment_value(text: str, option: str, now: datetime) -> Timestamp:
    """An RFC 3339 instant, or a duration before ``now`` (``90m``, ``2d``: that long ago); a
    usage error naming both forms otherwise."""
    try:
        return instant_value(text, option)
    except typer.BadParameter:
        pass
    try:
        ago = parse_duration(text)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is neither an RFC 3339 instant like 2026-12-06T09:00:00Z nor a "
            "duration ago like 90m or 2d",
            param_hint=option,
        ) from None
    stamp = Timestamp()
    stamp.FromDatetime(now - ago.ToTimedelta())
    return stamp
