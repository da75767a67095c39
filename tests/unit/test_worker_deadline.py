"""The deadline a target is told: the call's start plus its limit, by the worker's clock, as
RFC 3339 UTC with milliseconds and as seconds left."""

from __future__ import annotations

from datetime import UTC, datetime

from duetime_worker.deadline import deadline_in


def test_the_deadline_is_the_limit_from_now() -> None:
    now = datetime(2026, 10, 26, 20, 30, tzinfo=UTC).timestamp()
    deadline = deadline_in(5.25, clock=lambda: now)
    assert deadline.http_headers() == {
        "Duetime-Deadline": "2026-10-26T20:30:05.250Z",
        "Duetime-Deadline-Seconds": "5.25",
    }


def test_whole_and_tiny_limits() -> None:
    now = datetime(2026, 3, 8, 6, 59, 59, 999_000, tzinfo=UTC).timestamp()
    assert deadline_in(300, clock=lambda: now).rfc3339 == "2026-03-08T07:04:59.999Z"
    assert deadline_in(300, clock=lambda: now).seconds_text == "300"
    assert deadline_in(0.0004, clock=lambda: now).seconds_text == "0"
    assert deadline_in(-1, clock=lambda: now).seconds_text == "0"
