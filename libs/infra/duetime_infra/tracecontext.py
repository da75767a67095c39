"""W3C trace context for a run: the trace starts when the run is created and travels with it."""

from __future__ import annotations

import secrets
from dataclasses import dataclass


@dataclass(frozen=True)
class RunTrace:
    trace_id: str  # 32 hex digits
    traceparent: str


def new_run_trace() -> RunTrace:
    trace_id = secrets.token_hex(16)
    span_id = secrets.token_hex(8)
    return RunTrace(trace_id, f"00-{trace_id}-{span_id}-01")


def continue_trace(trace_id: str) -> RunTrace:
    """A new span in the run's existing trace (a redrive, a retry); a new trace if it has none."""
    if len(trace_id) != 32:
        return new_run_trace()
    return RunTrace(trace_id, f"00-{trace_id}-{secrets.token_hex(8)}-01")
