"""The deadline an HTTP target is told: the same instant and seconds a launched process gets,
as the two headers."""

from __future__ import annotations

import time

import pytest

from duetime_worker.targets.target_deadline import Deadline


def test_the_headers_carry_the_deadline_and_the_seconds_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(time, "time", lambda: 1_796_000_000.0)
    assert Deadline.headers_after(5.25) == {
        "Duetime-Deadline": "2026-11-30T00:53:25.25Z",
        "Duetime-Deadline-Seconds": "5.250",
    }
    assert Deadline.after(5.25).seconds_left(now=1_796_000_010.0) == "0.000"


def test_the_deadline_is_rfc3339_truncated_to_the_millisecond() -> None:
    assert Deadline(1_796_000_000.0).rfc3339 == "2026-11-30T00:53:20Z"
    assert Deadline(1_796_000_000.1009).rfc3339 == "2026-11-30T00:53:20.1Z"
    assert Deadline(1_796_000_000.0129).rfc3339 == "2026-11-30T00:53:20.012Z"
    assert Deadline(1_796_000_039.9999).rfc3339 == "2026-11-30T00:53:59.999Z"
    assert Deadline(1_796_000_040.0).rfc3339 == "2026-11-30T00:54:00Z"
