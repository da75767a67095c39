"""The ``duetime`` entry point. It imports nothing heavy before it has quieted gRPC's C core
and made Ctrl-C, from the first import on, end the command with one line and exit 130."""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

from duetime_cli.exits import ExitCode, Interrupted


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise Interrupted


def main() -> None:
    # gRPC's C core logs to stderr (a failed TLS handshake, say) what the error the command
    # prints already says; GRPC_VERBOSITY set by hand still turns its logs on.
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    signal.signal(signal.SIGINT, _interrupt)
    try:
        from duetime_cli.app import app

        app(prog_name="duetime")
    except Interrupted:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        sys.stderr.write("interrupted\n")
        sys.exit(ExitCode.INTERRUPTED)
