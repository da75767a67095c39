"""The worker's own lease watch: an attempt's call is stopped once its lease deadline passes
unrenewed, never before it, each attempt at its own deadline under the one timer they share,
and an attempt given up is never reported."""

from __future__ import annotations

import asyncio
import math
import time

import pytest

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_core.attempts import SUPERSEDED
from duetime_worker.attempt.executor import LEASE_LOST, _run_within_lease
from duetime_worker.attempt.heartbeats import ActiveAttempt
from duetime_worker.herd.timers import RESOLUTION, Deadlines
from duetime_worker.targets.outcome import Outcome
from testkit.executor import offline_executor


async def _forever() -> Outcome:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


def _attempt(name: str, lease: float) -> ActiveAttempt:
    loop = asyncio.get_running_loop()
    return ActiveAttempt(name, 1, asyncio.create_task(_forever()), loop.time() + lease)


async def test_each_call_stops_at_its_own_deadline_and_a_renewal_moves_it() -> None:
    loop = asyncio.get_running_loop()
    leases = Deadlines()
    late, early, renewed = _attempt("late", 0.3), _attempt("early", 0.05), _attempt("re", 0.1)
    ended: dict[str, float] = {}

    async def watch(active: ActiveAttempt) -> None:
        await _run_within_lease(active, leases)
        ended[active.run_id] = loop.time()

    watches = [asyncio.create_task(watch(a)) for a in (late, early, renewed)]
    await asyncio.sleep(0.02)
    renewed.renewed(loop.time(), 0.4)  # a beat moved its lease on
    await asyncio.wait_for(asyncio.gather(*watches), 5)
    for active in (late, early, renewed):
        assert active.task.cancelled()
        assert active.cancel_reason == LEASE_LOST
        # Never before its deadline (the shared timer may wake a millisecond early).
        assert ended[active.run_id] >= active.lease_deadline - 0.001
    assert ended["early"] < ended["late"] < ended["re"]


async def test_a_call_that_ends_first_is_not_stopped() -> None:
    leases = Deadlines()

    async def quick() -> Outcome:
        return Outcome.succeeded(status=200)

    loop = asyncio.get_running_loop()
    active = ActiveAttempt("quick", 1, asyncio.create_task(quick()), loop.time() + 30)
    await asyncio.wait_for(_run_within_lease(active, leases), 5)
    assert active.task.result().status == 200
    assert active.cancel_reason == ""
    unbounded = ActiveAttempt("inf", 1, asyncio.create_task(quick()), math.inf)
    await asyncio.wait_for(_run_within_lease(unbounded, leases), 5)
    assert unbounded.task.result().status == 200


class _Reports:
    """The scheduler's side of reports, recorded (``AttemptCalls.complete``)."""

    def __init__(self) -> None:
        self.sent: list[pb.CompleteAttemptRequest] = []

    async def complete(self, request: pb.CompleteAttemptRequest, attempt: int) -> None:
        self.sent.append(request)


@pytest.mark.parametrize("first", ["", SUPERSEDED])
async def test_a_call_given_up_at_its_lease_is_never_reported(first: str) -> None:
    """The watch gives a lease up within ``RESOLUTION`` of its end, while the loop's clock may
    still be short of it; a beat's renewal may arrive just after, or a CANCEL came first (its
    reason kept): none of these lets the attempt be reported."""
    loop = asyncio.get_running_loop()
    reports = _Reports()
    executor = offline_executor(reports)
    active = _attempt("edge", RESOLUTION / 2)
    if first:
        active.cancel_reason = first  # told to cancel; its call had not ended yet
    await asyncio.wait_for(_run_within_lease(active, Deadlines()), 5)
    assert active.task.cancelled()
    active.renewed(loop.time(), 30)  # the answer to a beat sent before the deadline
    assert not active.lapsed()
    await executor._report(active, time.monotonic())
    assert reports.sent == []
    # A call that ended on its own within its lease is reported.
    answered = ActiveAttempt(
        "answered", 1, await _finished(Outcome.succeeded(status=200)), loop.time() + 30
    )
    await executor._report(answered, time.monotonic())
    assert [r.run_id for r in reports.sent] == ["answered"]
    executor.tally.flush()


async def _finished(outcome: Outcome) -> asyncio.Task[Outcome]:
    async def ended() -> Outcome:
        return outcome

    task = asyncio.create_task(ended())
    await task
    return task
