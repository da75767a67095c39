"""A dispatch that says its run starts at its time (an overlap policy other than ALLOW) is not
asked for ahead: the worker holds it, taking no early permit, and asks once at its time, where
asking ahead would only be answered TOO_EARLY. Without the hint the same run is asked ahead;
with every early permit taken it is held until its time too."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from google.protobuf.timestamp_pb2 import Timestamp

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_worker.intake.dispatch import Dispatch
from testkit.executor import offline_executor

LEAD = 0.4


class _Scheduler:
    """Notes each start (asked ahead or not, when by the wall clock, and the early permits
    the worker holds as it asks) and refuses it, so the message ends at its first answer."""

    def __init__(self) -> None:
        self.asked: list[tuple[bool, float, int]] = []
        self.permits_taken: Callable[[], int] = lambda: 0

    async def start(self, request: pb.StartAttemptRequest, slack: float = 0.0) -> object:
        self.asked.append((request.early, time.time(), self.permits_taken()))
        return pb.StartAttemptResponse(
            decision=pb.START_DECISION_REFUSED, refusal_reason="JOB_PAUSED"
        )


async def _asked(
    at_its_time: bool, permits_free: bool = True, freed_after: float | None = None
) -> tuple[list[tuple[bool, float, int]], float]:
    """The starts asked for one run due ``LEAD`` s from now, and when it was due
    (``permits_free``: else every early permit is held by other runs as it comes, one given
    back after ``freed_after`` s if set)."""
    scheduler = _Scheduler()
    executor = offline_executor(scheduler, early=10)
    early = executor._early
    while not permits_free and early.try_reserve():
        pass
    held = early._taken
    scheduler.permits_taken = lambda: early._taken - held
    if freed_after is not None:
        asyncio.get_running_loop().call_later(freed_after, early.release)
    now = Timestamp()
    now.GetCurrentTime()
    executor._clock.observe(now)  # the server's time known: this host's
    due = time.time() + LEAD
    dispatch = Dispatch(run_id="run-1", not_before=int(due * 1e9), at_its_time=at_its_time)
    await asyncio.wait_for(executor.process(dispatch, "d-1", lambda: None), 5)
    return scheduler.asked, due


async def test_a_run_that_starts_at_its_time_is_asked_for_once_holding_no_early_permit() -> None:
    asked, due = await _asked(at_its_time=True)
    ((early, when, permits),) = asked
    assert not early
    assert when >= due
    assert permits == 0


async def test_without_the_hint_the_same_run_is_asked_for_ahead_under_an_early_permit() -> None:
    asked, due = await _asked(at_its_time=False)
    ((early, when, permits),) = asked
    assert early
    assert when < due
    assert permits == 1


async def test_a_run_that_finds_every_early_permit_taken_is_asked_for_once_at_its_time() -> None:
    asked, due = await _asked(at_its_time=False, permits_free=False)
    ((early, when, permits),) = asked
    assert not early
    assert when >= due
    assert permits == 0


async def test_an_early_permit_given_back_meanwhile_still_starts_that_run_ahead() -> None:
    asked, due = await _asked(at_its_time=False, permits_free=False, freed_after=0.05)
    ((early, when, permits),) = asked
    assert early
    assert when < due
    assert permits == 0  # the permit given back, taken by this run: the count is as before
