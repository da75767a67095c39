"""One attempt's state (``attempt/lifecycle.py``): what its report says of how its task ended,
and an at-most-once call's announcement, acknowledged by the first renewal of a beat that
carried it."""

from __future__ import annotations

import asyncio

from google.protobuf.timestamp_pb2 import Timestamp

from duetime.jobs.v1 import job_pb2
from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_core.records import AttemptOutcome
from duetime_worker.attempt.lifecycle import Attempt
from duetime_worker.attempt.wire import started_from
from duetime_worker.targets.outcome import BEGUN, NOT_BEGUN, UNSAID, Outcome


async def _forever() -> Outcome:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


async def _stopped(attempt: Attempt, stop: str, reason: str) -> Outcome:
    attempt.run(asyncio.create_task(_forever()))
    await asyncio.sleep(0)
    getattr(attempt, stop)(reason)
    await asyncio.gather(attempt.task, return_exceptions=True)
    return attempt.outcome()


async def test_the_outcome_says_how_the_task_ended_and_how_far_the_call_got() -> None:
    cancelled = await _stopped(Attempt("r", 1, at_most_once=True), "cancel", "SUPERSEDED")
    assert (cancelled.result, cancelled.error) == (AttemptOutcome.CANCELLED, "SUPERSEDED")
    assert cancelled.call == NOT_BEGUN
    stopping = await _stopped(Attempt("r", 1), "hand_back", "shutting down")
    assert (stopping.result, stopping.error) == (AttemptOutcome.HANDED_BACK, "shutting down")
    assert stopping.call == UNSAID
    # Started ahead and cancelled before its call began (its job paused): given back unrun.
    paused = await _stopped(Attempt("r", 1, ahead=True), "cancel", "JOB_PAUSED")
    assert (paused.result, paused.error) == (AttemptOutcome.HANDED_BACK, "not begun: JOB_PAUSED")
    assert paused.call == NOT_BEGUN
    began = Attempt("r", 1, ahead=True)
    began.call_begins(123)
    assert (await _stopped(began, "cancel", "X")).result == AttemptOutcome.CANCELLED
    assert began.call_time == 123

    async def broken() -> Outcome:
        raise ValueError("a bug")

    failed = Attempt("r", 1)
    failed.run(asyncio.create_task(broken()))
    await asyncio.gather(failed.task, return_exceptions=True)
    assert failed.outcome() == Outcome.failed("worker error: ValueError", retryable=True)


async def test_an_announcement_is_acknowledged_by_a_renewal_of_a_beat_that_carried_it() -> None:
    attempt = Attempt("r", 1, at_most_once=True)
    attempt.announce(beat=5)
    assert attempt.call == BEGUN
    acknowledged = asyncio.create_task(attempt.acknowledged())
    attempt.beat_answered(4)  # sent before the announcement
    await asyncio.sleep(0)
    assert not acknowledged.done()
    attempt.beat_answered(5)
    await asyncio.wait_for(acknowledged, 1)


def test_a_started_answer_is_an_attempt_whose_lease_counts_from_the_send() -> None:
    response = pb.StartAttemptResponse(
        decision=pb.START_DECISION_STARTED,
        attempt=3,
        server_time=Timestamp(seconds=1_000),
        lease_expire_time=Timestamp(seconds=1_060),
    )
    response.run.run_id = "r"
    response.run.delivery = job_pb2.DELIVERY_AT_MOST_ONCE
    attempt = Attempt.of(started_from(response, 50.0))
    assert (attempt.key, attempt.lease_deadline, attempt.began) == (("r", 3), 110.0, True)
    assert (attempt.at_most_once, attempt.call) == (True, NOT_BEGUN)
    response.call_time.seconds = 1_005  # started ahead: its call has not begun
    assert not Attempt.of(started_from(response, 50.0)).began
