"""The lease rule: an attempt's call goes on only within the lease the scheduler granted it, as
this worker counts it.

The scheduler grants a lease with each start and renews it with each answered heartbeat
(``heartbeats``). The worker counts it on its own monotonic clock from when the granting
request was sent (``lease_length``), so its deadline is at or before the scheduler's, whatever
the network and a frozen process did meanwhile. Three rules follow, all here:

- **A call may begin**, and each step of it send something, only while the lease will outlast
  that step (``Lease.check_lease``, the send check the targets run): a worker frozen past its
  deadline may run its call's next step before the watch's timer.
- **A call is given up** once the deadline passes unrenewed (``watch``): its task is cancelled
  (a local process killed; an HTTP request, which pyreqwest cannot abort, runs on to its own
  timeout and its answer is dropped).
- **A report is dropped** (``Lease.report_dropped``) when the watch gave the call up, the
  scheduler said the attempt is closed, or the lease lapsed meanwhile: the scheduler closes the
  attempt at the same moment and may already have given the run to another worker.
"""

from __future__ import annotations

import asyncio
import math

from duetime_core.attempts import ATTEMPT_CLOSED
from duetime_worker.herd.timers import RESOLUTION, Deadlines
from duetime_worker.targets.outcome import LeaseLapsed, Outcome

LEASE_LOST = "the attempt's lease ran out without a renewal"


def lease_length(lease_expire_time: int, server_time: int) -> float:
    """Seconds of lease the scheduler granted, from two instants of its clock (nanoseconds
    since the epoch); infinite when the answer carries no lease (0: nothing to enforce)."""
    if not lease_expire_time:
        return math.inf
    return (lease_expire_time - server_time) / 1e9


class Lease:
    """A call under a lease: the task it runs as (``run``), the event loop's time past which it
    may not go on unless renewed (``lease_deadline``), and why it was stopped, if it was.
    Its fields are read anywhere and changed only through its methods."""

    __slots__ = ("cancel_reason", "given_up", "lease_deadline", "task")

    task: asyncio.Task[Outcome]

    def __init__(self, lease_deadline: float = math.inf) -> None:
        self.lease_deadline = lease_deadline
        self.cancel_reason = ""
        # Given up by its watch (the lease counted as lapsed, up to a millisecond early):
        # never reported, whatever another cancel said first or a late renewal says.
        self.given_up = False

    def run(self, task: asyncio.Task[Outcome]) -> None:
        """The call runs as ``task``, which the lease bounds from now on."""
        self.task = task

    def renewed(self, sent_at: float, length: float) -> None:
        """A renewal of ``length`` seconds, counted from ``sent_at``, when its request was sent."""
        self.lease_deadline = max(self.lease_deadline, sent_at + length)

    def lapsed(self, within: float = 0.0) -> bool:
        """Whether the lease may have run out (or will have, ``within`` seconds from now) by
        this worker's clock."""
        return asyncio.get_running_loop().time() + within >= self.lease_deadline

    def check_lease(self, within: float = 0.0) -> None:
        """The call's send check (``SendCheck``): raises LeaseLapsed when the lease may lapse
        within ``within`` seconds, so that nothing of the call is sent."""
        if self.lapsed(within):
            raise LeaseLapsed

    def cancel(self, reason: str) -> None:
        """Stops the call; the first reason given is the one kept."""
        if not self.cancel_reason:
            self.cancel_reason = reason
        self.task.cancel()

    def give_up(self) -> None:
        """The watch's end of the call: its lease lapsed."""
        self.given_up = True
        self.cancel(LEASE_LOST)

    def report_dropped(self) -> bool:
        """Whether the call's end goes unreported: its watch gave it up, the scheduler closed
        the attempt, or the lease lapsed meanwhile (a worker that froze past its deadline may
        see the target's answer before its timer)."""
        return self.given_up or self.cancel_reason == ATTEMPT_CLOSED or self.lapsed()


async def watch(lease: Lease, timers: Deadlines) -> None:
    """Waits for the lease's task, giving the call up when the deadline passes unrenewed
    (``timers``: the timer the worker's lease watches share, which wakes up to a millisecond
    early: a lease that close to its end counts as lapsed, never later than it)."""
    loop = asyncio.get_running_loop()
    task = lease.task
    while not task.done():
        left = lease.lease_deadline - loop.time()
        if left <= RESOLUTION:
            lease.give_up()
            break
        await _ended(task, timers if left < math.inf else None, lease.lease_deadline)
    if not task.done():  # given up above: its outcome is awaited too
        await _ended(task, None, math.inf)


async def _ended(task: asyncio.Task[Outcome], timers: Deadlines | None, deadline: float) -> None:
    """Returns when ``task`` is done or, given ``timers``, the loop's clock reaches
    ``deadline`` (up to a millisecond early); a cancelled task is an outcome here, not our
    cancellation. (``asyncio.wait`` does the same for about half again the cost, and a herd
    waits on thousands of calls.)"""
    woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake(_: object) -> None:
        if not woken.done():
            woken.set_result(None)

    task.add_done_callback(wake)
    if timers is not None:
        timers.add(woken, deadline)
    try:
        await woken
    finally:
        task.remove_done_callback(wake)
