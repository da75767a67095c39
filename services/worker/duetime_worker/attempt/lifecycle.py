"""One attempt on this worker, from the scheduler's STARTED answer (``Started``) to its outcome;
or none, for a start answered ``TooEarly`` (ask again later) or ``StartRefused`` (never).

An ``Attempt`` is its call under a lease (``lease.Lease``), plus what the heartbeats say of it
and what its report says. Its state changes only through its named methods, in this order:

- ``run``: its task starts; the heartbeats list it from then on (``Heartbeats.add``);
- ``call_begins``: an attempt started ahead of its run's time begins its call at that time
  (one not started ahead has begun from the start);
- ``announce`` and ``beat_answered``: an at-most-once call is announced on the heartbeat
  stream and begins only once a beat carrying the announcement is answered;
- ``renewed`` by each answered beat; ``told_to_cancel`` by the scheduler, ``hand_back`` by a
  stopping worker, ``give_up`` by its lease watch;
- ``outcome``: how its task ended, as its report says it.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass

from duetime_core.attempts import JOB_PAUSED
from duetime_worker.attempt.lease import Lease
from duetime_worker.targets.outcome import BEGUN, NOT_BEGUN, UNSAID, Call, Outcome
from duetime_worker.targets.run import TargetRun

log = logging.getLogger(__name__)

Key = tuple[str, int]


class TooEarly(Exception):
    """The scheduler would not start the run yet: ask again at ``again`` (its clock, in
    nanoseconds since the epoch)."""

    def __init__(self, again: int) -> None:
        super().__init__()
        self.again = again


class StartRefused(Exception):
    """No attempt, now or later: the start was refused (``reason``: the scheduler's), or kept
    failing past its patience. The message is answered (its offset may be committed) and
    dropped."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Started:
    """The scheduler's STARTED answer, read once (``wire.started_from``): the run as its
    target is called for it, and its attempt's facts."""

    run: TargetRun
    attempt: int
    # The event loop's time past which the lease may have lapsed: counted from when the start
    # was sent (infinite: the answer carries no lease).
    lease_deadline: float = math.inf
    timeout: float = 0.0  # the attempt timeout, seconds; 0: not said
    # When an attempt started ahead of its run's time calls, in nanoseconds by the server's
    # clock; None: not started ahead, its call begins at once.
    call_time: int | None = None
    at_most_once: bool = False
    # The run's nominal time in nanoseconds since the epoch, as the answer's RunSpec says it
    # (None: not said): the attempt's beats and report pass it on, a hint that lets the
    # scheduler find the run in one partition.
    nominal_time: int | None = None


class Attempt(Lease):
    __slots__ = (
        "_acknowledged",
        "announced_from",
        "at_most_once",
        "attempt",
        "began",
        "call",
        "call_time",
        "handed_back",
        "nominal_time",
        "run_id",
    )

    def __init__(
        self,
        run_id: str,
        attempt: int,
        lease_deadline: float = math.inf,
        *,
        ahead: bool = False,
        at_most_once: bool = False,
        nominal_time: int | None = None,
    ) -> None:
        super().__init__(lease_deadline)
        self.run_id = run_id
        self.attempt = attempt
        self.nominal_time = nominal_time  # the run's (``Started.nominal_time``)
        # Given back unfinished because the worker is stopping (not a cancel it was told to do).
        self.handed_back = False
        # An attempt started ``ahead`` of its time has not begun its call until ``call_begins``,
        # and then says when, by the server's clock as this worker estimates it (nanoseconds).
        self.began = not ahead
        self.call_time: int | None = None
        # How far its call got, said in every beat: tracked for at-most-once attempts only.
        self.at_most_once = at_most_once
        self.call: Call = NOT_BEGUN if at_most_once else UNSAID
        # The first beat that carries the call's announcement, and what its answer sets.
        self.announced_from: int | None = None
        self._acknowledged: asyncio.Event | None = None

    @classmethod
    def of(cls, started: Started) -> Attempt:
        """The attempt a STARTED answer gives this worker, its lease counted from the send."""
        return cls(
            started.run.run_id,
            started.attempt,
            started.lease_deadline,
            ahead=started.call_time is not None,
            at_most_once=started.at_most_once,
            nominal_time=started.nominal_time,
        )

    @property
    def key(self) -> Key:
        return (self.run_id, self.attempt)

    def told_to_cancel(self, reason: str) -> bool:
        """The scheduler's CANCEL; False when it comes too late to stop the call: a pause
        cancels an attempt started ahead only until its call begins (the scheduler decided
        before the call's time, and a call begun since runs on, as any running attempt of a
        paused job does)."""
        if reason == JOB_PAUSED and self.began:
            return False
        self.cancel(reason or "cancelled by the scheduler")
        return True

    def hand_back(self, reason: str) -> None:
        """Stops the call because the worker is stopping: reported HANDED_BACK."""
        self.handed_back = True
        self.cancel(reason)

    def call_begins(self, call_time: int) -> None:
        """An attempt started ahead begins its call, at ``call_time`` (server clock, ns)."""
        self.began = True
        self.call_time = call_time

    def announce(self, beat: int) -> None:
        """The call is announced from beat number ``beat`` on (at most once)."""
        self.call = BEGUN
        self.announced_from = beat
        self._acknowledged = asyncio.Event()

    def beat_answered(self, beat: int) -> None:
        """Beat number ``beat`` renewed the lease: the announcement, if it carried it, is
        acknowledged."""
        acknowledged, since = self._acknowledged, self.announced_from
        if acknowledged is not None and since is not None and beat >= since:
            acknowledged.set()

    async def acknowledged(self) -> None:
        """Returns once a beat carrying the announcement was answered with a renewal."""
        if self._acknowledged is not None:
            await self._acknowledged.wait()

    def outcome(self) -> Outcome:
        """How the attempt's task ended, as its report says it."""
        task = self.task
        # Stopped before its own outcome: the call got as far as the attempt's record says.
        call = self.call
        if task.cancelled():
            reason = self.cancel_reason or "cancelled"
            if self.handed_back or not self.began:
                # Stopping, or cancelled before a call started ahead of its time began (its job
                # was paused or deleted since): given back unrun, for the start to decide again.
                if not self.began:
                    return Outcome.handed_back(f"not begun: {reason}", call=NOT_BEGUN)
                return Outcome.handed_back(reason, call=call)
            return Outcome.cancelled(reason, call=call)
        error = task.exception()
        if error is not None:
            log.error(
                "target call failed unexpectedly",
                extra={"action": "target_error", "run_id": self.run_id},
                exc_info=error,
            )
            return Outcome.failed(
                f"worker error: {type(error).__name__}", retryable=True, call=call
            )
        return task.result()
