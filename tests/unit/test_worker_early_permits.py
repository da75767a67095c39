"""An early-start permit goes back whatever ends the start asked with it: an answer, the
worker stopping, or the message's task cancelled (a Kafka rebalance gives up every message
not yet answered). One lost per cancelled start would leave a worker without early starts
after a rolling deploy."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_worker.herd.slots import Flow
from duetime_worker.intake.dispatch import Dispatch
from testkit.executor import offline_executor


class _Scheduler:
    """A scheduler whose starts are answered when the test says (``AttemptCalls.start``):
    refused, so a start cancelled meanwhile ends with its cancellation."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.answer = asyncio.Event()

    async def start(self, request: pb.StartAttemptRequest, slack: float = 0.0) -> Any:
        self.asked.set()
        await self.answer.wait()
        return pb.StartAttemptResponse(
            decision=pb.START_DECISION_REFUSED, refusal_reason="JOB_PAUSED"
        )


def _due_in(seconds: float, team: str) -> Dispatch:
    due = int((time.time() + seconds) * 1e9)
    return Dispatch(run_id=f"run-{team}", not_before=due, flow=Flow(team=team))


async def test_starts_cancelled_ahead_or_waiting_for_their_turn_give_early_permits_back() -> None:
    scheduler = _Scheduler()
    executor = offline_executor(scheduler, starting=1, early=2)
    now = Timestamp()
    now.GetCurrentTime()
    executor._clock.observe(now)  # the server's time known
    # One start asked ahead (its answer not yet come), one waiting for the start permit it
    # holds: both early permits are taken.
    asked = asyncio.create_task(executor.process(_due_in(10, "a"), "d-1", lambda: None))
    await asyncio.wait_for(scheduler.asked.wait(), 5)
    waiting = asyncio.create_task(executor.process(_due_in(10, "b"), "d-2", lambda: None))
    for _ in range(100):
        if executor._early._taken == 2:
            break
        await asyncio.sleep(0.01)
    assert executor._early._taken == 2
    # A rebalance gives both messages up: the waiting one at once, the one asked once its
    # answer has come (a start is seen through to its answer).
    waiting.cancel()
    asked.cancel()
    scheduler.answer.set()
    await asyncio.wait_for(asyncio.gather(asked, waiting, return_exceptions=True), 5)
    assert asked.cancelled()
    assert waiting.cancelled()
    assert executor._early._taken == 0
