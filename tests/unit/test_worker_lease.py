"""The lease rule (``attempt/lease.py``): a call may send only while its lease will outlast
the step, it is stopped once its lease deadline passes unrenewed (never before it, each attempt
at its own deadline under the one timer they share), and an attempt given up, closed by the
scheduler or past its lease is never reported."""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any, cast

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_core.attempts import ATTEMPT_CLOSED, SUPERSEDED
from duetime_worker.attempt.lease import LEASE_LOST, Lease, lease_length, watch
from duetime_worker.attempt.lifecycle import Attempt
from duetime_worker.attempt.reporter import Reporter
from duetime_worker.attempt.tally import AttemptTally
from duetime_worker.herd.governor import Herd
from duetime_worker.herd.timers import RESOLUTION, Deadlines
from duetime_worker.targets.outcome import LeaseLapsed, Outcome


async def _forever() -> Outcome:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


def _attempt(name: str, lease: float) -> Attempt:
    loop = asyncio.get_running_loop()
    attempt = Attempt(name, 1, loop.time() + lease)
    attempt.run(asyncio.create_task(_forever()))
    return attempt


def test_the_lease_granted_is_counted_between_two_instants_of_the_schedulers_clock() -> None:
    now = Timestamp(seconds=1_000).ToNanoseconds()
    assert lease_length(Timestamp(seconds=1_060, nanos=500_000_000).ToNanoseconds(), now) == 60.5
    assert lease_length(Timestamp().ToNanoseconds(), now) == math.inf  # no lease


async def test_a_call_may_send_only_while_its_lease_outlasts_the_step() -> None:
    loop = asyncio.get_running_loop()
    lease = Lease(loop.time() + 1)
    lease.check_lease()
    lease.check_lease(within=0.5)
    with pytest.raises(LeaseLapsed):
        lease.check_lease(within=2)  # e.g. a connect that may take longer than the lease left
    lease.renewed(loop.time(), 10)
    lease.check_lease(within=2)
    lease.renewed(loop.time() - 5, 1)  # a renewal sent earlier never shortens it
    lease.check_lease(within=2)
    with pytest.raises(LeaseLapsed):
        Lease(loop.time()).check_lease()


async def test_a_report_is_dropped_once_given_up_closed_or_lapsed() -> None:
    kept = _attempt("kept", 30)
    kept.cancel(SUPERSEDED)  # told to stop: its end is still reported
    closed = _attempt("closed", 30)
    closed.cancel(ATTEMPT_CLOSED)
    lapsed = _attempt("lapsed", -1)
    given_up = _attempt("given up", 30)
    given_up.give_up()
    given_up.renewed(asyncio.get_running_loop().time(), 60)  # a renewal come too late
    assert not kept.report_dropped()
    assert closed.report_dropped()
    assert lapsed.report_dropped()
    assert given_up.report_dropped()
    assert given_up.cancel_reason == LEASE_LOST
    await asyncio.gather(*(a.task for a in (kept, closed, given_up)), return_exceptions=True)
    lapsed.task.cancel()


async def test_each_call_stops_at_its_own_deadline_and_a_renewal_moves_it() -> None:
    loop = asyncio.get_running_loop()
    leases = Deadlines()
    late, early, renewed = _attempt("late", 0.3), _attempt("early", 0.05), _attempt("re", 0.1)
    ended: dict[str, float] = {}

    async def watched(active: Attempt) -> None:
        await watch(active, leases)
        ended[active.run_id] = loop.time()

    watches = [asyncio.create_task(watched(a)) for a in (late, early, renewed)]
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
    active = Attempt("quick", 1, loop.time() + 30)
    active.run(asyncio.create_task(quick()))
    await asyncio.wait_for(watch(active, leases), 5)
    assert active.task.result().status == 200
    assert active.cancel_reason == ""
    unbounded = Attempt("inf", 1, math.inf)
    unbounded.run(asyncio.create_task(quick()))
    await asyncio.wait_for(watch(unbounded, leases), 5)
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
    tally = AttemptTally()
    reporter = Reporter(cast(Any, reports), "w-1", Herd(), tally)
    active = _attempt("edge", RESOLUTION / 2)
    if first:
        active.cancel(first)  # told to cancel; its call has not ended yet
    async with asyncio.timeout(5):
        await watch(active, Deadlines())  # in this task: it looks before the call has ended
    assert active.task.cancelled()
    active.renewed(loop.time(), 30)  # the answer to a beat sent before the deadline
    assert not active.lapsed()
    await reporter.report(active, time.monotonic())
    assert reports.sent == []
    # A call that ended on its own within its lease is reported.
    answered = Attempt("answered", 1, loop.time() + 30)
    answered.run(await _finished(Outcome.succeeded(status=200)))
    await reporter.report(answered, time.monotonic())
    assert [r.run_id for r in reports.sent] == ["answered"]
    tally.flush()


async def _finished(outcome: Outcome) -> asyncio.Task[Outcome]:
    async def ended() -> Outcome:
        return outcome

    task = asyncio.create_task(ended())
    await task
    return task
