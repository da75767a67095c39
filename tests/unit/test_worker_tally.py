"""The worker's per-second attempt counts: one INFO line for many runs, none when idle."""

from __future__ import annotations

import logging

import pytest

from duetime_worker.attempt import tally
from duetime_worker.attempt.tally import AttemptTally
from testkit.polling import eventually


def summaries(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "action", "") == "attempts_summary"]


async def test_counts_are_logged_once_an_interval_and_reset(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    counts = AttemptTally(interval=0.05)
    for _ in range(1000):
        counts.count(tally.STARTED)
    for _ in range(998):
        counts.count(tally.SUCCEEDED)
    counts.count(tally.FAILED)
    counts.count(tally.REFUSED)
    assert counts.due

    async def logged() -> bool:
        return bool(summaries(caplog))

    await eventually(logged, 10, "an attempts_summary line", interval=0.01)
    (line,) = summaries(caplog)
    assert line.levelno == logging.INFO
    fields = {k: getattr(line, k, None) for k in ("started", "succeeded", "failed", "refused")}
    assert fields == {"started": 1000, "succeeded": 998, "failed": 1, "refused": 1}
    # Nothing counted since: no line is due for quiet intervals, and a flush logs nothing.
    assert not counts.due
    counts.flush()
    assert len(summaries(caplog)) == 1


async def test_flush_logs_what_is_counted_at_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    counts = AttemptTally(interval=60)
    counts.count(tally.HANDED_BACK)
    counts.flush()
    (line,) = summaries(caplog)
    assert getattr(line, "handed_back", None) == 1
