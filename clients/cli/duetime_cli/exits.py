"""The exit status of ``duetime``, one per family of gRPC status codes, and the interrupt
(Ctrl-C) that ends any command with 130.

Nothing heavy is imported here: the entry point (``duetime_cli.main``) needs these before gRPC,
protobuf or rich are loaded.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """The exit status of ``duetime``, one per family of gRPC status codes."""

    OK = 0
    ERROR = 1
    USAGE = 2
    INVALID = 3
    NOT_FOUND = 4
    CONFLICT = 5
    PRECONDITION = 6
    AUTH = 7
    QUOTA = 8
    UNAVAILABLE = 9
    RUN_FAILED = 10
    INTERRUPTED = 130


EXIT_CODE_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "done",
    ExitCode.ERROR: "INTERNAL, UNKNOWN, DATA_LOSS, UNIMPLEMENTED: a fault, not your input",
    ExitCode.USAGE: "the command line is wrong (unknown option, missing argument)",
    ExitCode.INVALID: "INVALID_ARGUMENT, OUT_OF_RANGE, or a job file that does not parse",
    ExitCode.NOT_FOUND: "NOT_FOUND",
    ExitCode.CONFLICT: "ALREADY_EXISTS, ABORTED (etag mismatch): read again and retry",
    ExitCode.PRECONDITION: "FAILED_PRECONDITION: the job or run is in the wrong state",
    ExitCode.AUTH: "UNAUTHENTICATED, PERMISSION_DENIED, no token given, or the server's "
    "certificate not trusted (--ca-file)",
    ExitCode.QUOTA: "RESOURCE_EXHAUSTED",
    ExitCode.UNAVAILABLE: "UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, or --wait timed out",
    ExitCode.RUN_FAILED: "--wait: the run ended other than SUCCEEDED",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C)",
}


class Interrupted(BaseException):
    """Ctrl-C, raised by the entry point's SIGINT handler in place of KeyboardInterrupt, which
    Typer would turn into a silent exit. Like KeyboardInterrupt it is no ``Exception``: only
    the entry point (and a command with something to say, like ``--wait``) catches it."""
