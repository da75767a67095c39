"""Structured logging: one JSON object per line, with the record's `extra` fields and, inside a
span, its trace and span ids (as OpenTelemetry writes them: 32 and 16 hex digits)."""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

from opentelemetry import trace

_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S%z"


class JsonFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__()
        # The time text of the last whole second seen: a worker in a herd logs thousands of
        # lines a second, and formatting the time is a large part of each line's cost.
        self._second = -1
        self._time = ""

    def format(self, record: logging.LogRecord) -> str:
        second = int(record.created)
        if second != self._second:
            self._second, self._time = second, self.formatTime(record, _TIME_FORMAT)
        body: dict[str, Any] = {
            "time": self._time,
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        body.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            body["trace_id"] = f"{context.trace_id:032x}"
            body["span_id"] = f"{context.span_id:016x}"
        if record.exc_info:
            body["exception"] = self.formatException(record.exc_info)
        return json.dumps(body, default=str)


def configure_logging(level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=level, handlers=[handler], force=True)


def quiet_grpc_core() -> None:
    """Silences gRPC's C core, whose own log lines are text on stderr amid the JSON, unless
    GRPC_VERBOSITY asks for them (with GRPC_TRACE, to trace a transport). The C core reads it
    when grpc is first imported, so this runs first: in each service's package."""
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
