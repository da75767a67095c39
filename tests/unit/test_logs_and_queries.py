"""Log lines carry the current trace, and named queries are sent in a shape that names their
spans and shows in pg_stat_activity, reading the clock once a statement."""

from __future__ import annotations

import json
import logging
import re

import pytest
from opentelemetry.sdk.trace import TracerProvider

from duetime_infra.logs import JsonFormatter
from duetime_infra.pg.sql import q, queries, waiting


def _line(message: str) -> dict[str, object]:
    record = logging.makeLogRecord({"msg": message, "action": "tested"})
    body: dict[str, object] = json.loads(JsonFormatter().format(record))
    return body


def test_a_log_line_inside_a_span_carries_its_trace_and_span_ids() -> None:
    assert "trace_id" not in _line("outside")
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("work") as span:
        line = _line("inside")
    context = span.get_span_context()
    assert (line["trace_id"], line["span_id"], line["action"]) == (
        f"{context.trace_id:032x}",
        f"{context.span_id:016x}",
        "tested",
    )


def test_every_query_is_sent_as_its_name_then_a_statement() -> None:
    found = queries()
    assert found
    for name, text in found.items():
        match = re.match(r"/\* ([a-z0-9_]+) \*/ (\w+)", text)
        assert match is not None, name
        assert match[1] == name
        assert match[2].upper() in {"SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "SET"}, name


def test_every_query_reads_the_clock_once_a_statement() -> None:
    # duetime_now() is a SQL function PostgreSQL does not inline: written bare it runs for
    # every row; as (SELECT duetime_now()) it is evaluated once (attempts.sql says why).
    for name, text in queries().items():
        code = "\n".join(line.split("--")[0] for line in text.splitlines())
        if code.strip() == f"/* {name} */ SELECT duetime_now();":
            continue
        assert "duetime_now()" not in code.replace("(SELECT duetime_now())", ""), name


def test_a_waiting_form_is_its_query_without_skip_locked_under_a_name_of_its_own() -> None:
    name = "attempt_batch_runs_lock"
    text = waiting(name)
    assert text.startswith(f"/* {name}_waiting */ SELECT ")
    assert "SKIP LOCKED" not in text
    assert text.split("*/", 1)[1] == q(name).split("*/", 1)[1].replace(" SKIP LOCKED;", ";")
    with pytest.raises(ValueError, match="attempt_start"):
        waiting("attempt_start")  # nothing to wait for in a statement that skips nothing
