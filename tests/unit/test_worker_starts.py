"""What a start's answer means for its message (``duetime_worker.attempt.starts``), read at the
edge: STARTED is the attempt, TOO_EARLY says when to ask again, anything else is a refusal,
counted and logged with the scheduler's reason."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_worker.attempt.lifecycle import StartRefused, TooEarly
from duetime_worker.attempt.scheduler_client import AttemptCalls
from duetime_worker.attempt.server_clock import ServerClock
from duetime_worker.attempt.starts import StartCalls
from duetime_worker.attempt.tally import AttemptTally
from duetime_worker.herd.slots import WeightedSlots


class _Scheduler:
    """Answers every start with ``answer``, keeping what it was asked."""

    def __init__(self, answer: pb.StartAttemptResponse) -> None:
        self.answer = answer
        self.asked: list[tuple[pb.StartAttemptRequest, float]] = []

    async def start(self, request: pb.StartAttemptRequest, slack: float = 0.0) -> Any:
        self.asked.append((request, slack))
        return self.answer


def _starts(scheduler: _Scheduler, tally: AttemptTally, clock: ServerClock) -> StartCalls:
    calls = cast(AttemptCalls, scheduler)
    return StartCalls(calls, "w", clock, WeightedSlots(1), asyncio.Event(), tally, "i-1")


async def test_a_started_answer_is_the_attempt_and_its_server_time_is_observed() -> None:
    answer = pb.StartAttemptResponse(
        decision=pb.START_DECISION_STARTED, attempt=2, server_time=Timestamp(seconds=2_000)
    )
    answer.run.run_id = "r"
    scheduler, clock = _Scheduler(answer), ServerClock()
    started = await _starts(scheduler, AttemptTally(), clock).start("r", "d-1")
    assert (started.run.run_id, started.attempt) == ("r", 2)
    assert clock.offset() is not None
    ((request, slack),) = scheduler.asked
    assert (request.run_id, request.worker_id, request.early, slack) == ("r", "w", False, 0.0)
    assert request.delivery_id == "d-1@i-1"


async def test_a_start_asked_ahead_says_so_and_too_early_says_when_to_ask_again() -> None:
    answer = pb.StartAttemptResponse(
        decision=pb.START_DECISION_TOO_EARLY, effective_time=Timestamp(seconds=5)
    )
    scheduler = _Scheduler(answer)
    with pytest.raises(TooEarly) as too_early:
        await _starts(scheduler, AttemptTally(), ServerClock()).start("r", "d-1", 5 * 10**9)
    assert too_early.value.again == 5 * 10**9
    assert scheduler.asked[0][0].early


async def test_a_refusal_is_counted_and_logged_with_its_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    answer = pb.StartAttemptResponse(
        decision=pb.START_DECISION_REFUSED, refusal_reason="JOB_PAUSED"
    )
    tally = AttemptTally()
    caplog.set_level(logging.INFO, "duetime_worker.attempt.starts")
    with pytest.raises(StartRefused):
        await _starts(_Scheduler(answer), tally, ServerClock()).start("r", "d-1")
    assert tally.due  # counted
    (record,) = [r for r in caplog.records if getattr(r, "action", "") == "start_refused"]
    assert (getattr(record, "run_id", None), getattr(record, "reason", None)) == ("r", "JOB_PAUSED")
    tally.flush()


async def test_a_start_asked_ahead_waits_for_company_unless_it_took_the_last_permit() -> None:
    answer = pb.StartAttemptResponse(decision=pb.START_DECISION_STARTED, attempt=1)
    answer.run.run_id = "r"
    scheduler, clock = _Scheduler(answer), ServerClock()
    now = Timestamp()
    now.GetCurrentTime()
    clock.observe(now)
    permits = WeightedSlots(2)
    calls = cast(AttemptCalls, scheduler)
    starts = StartCalls(calls, "w", clock, permits, asyncio.Event(), AttemptTally(), "i-1")
    ahead = now.ToNanoseconds() + 8 * 10**9  # due in 8 s
    await permits.reserve()
    await starts.start("r", "d-1", ahead)  # one permit still free: it may wait for company
    await permits.reserve()
    await starts.start("r", "d-2", ahead)  # the last one: no company can come
    (_, first), (_, last) = scheduler.asked
    assert first > 7
    assert last == 0.0
