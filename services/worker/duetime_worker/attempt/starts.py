"""Asking the scheduler for a dispatch's attempt (StartAttempt), retried through failures, and
what its answer means for the message: ``Started`` (the attempt is this worker's to run), or
one of three exceptions, ``TooEarly`` (ask again later), ``StartRefused`` (the message is
answered and dropped; both in ``lifecycle``) and ``Unanswered`` (a stopping worker gave up: the
message stays uncommitted, for another worker). The request is written and its answer read at
the edge (``wire``).

A delivery id carries this process's incarnation (``Heartbeats.incarnation``, which its beats
name too): a delivery asked again by it is replayed its attempt, while a worker restarted under
the same id (a pod's container) is refused the attempts of its predecessor, whose calls may
have begun; they end at their leases and retry.
"""

from __future__ import annotations

import asyncio
import logging
import math

from grpc import aio

from duetime_core.backoff import DoublingBackoff
from duetime_worker.attempt import tally
from duetime_worker.attempt.lifecycle import Started, StartRefused
from duetime_worker.attempt.scheduler_client import (
    FIRST_RETRY,
    MAX_RETRY,
    PERMANENT,
    RPC_TIMEOUT,
    AttemptCalls,
)
from duetime_worker.attempt.server_clock import ServerClock
from duetime_worker.attempt.tally import AttemptTally
from duetime_worker.attempt.wire import server_time, start_request, started_from
from duetime_worker.herd.slots import WeightedSlots

log = logging.getLogger(__name__)

# How long a start that keeps failing (not TOO_EARLY) is retried before the message is dropped:
# holding it longer would stop its partition's commits and a concurrency slot for good, and the
# relay's reconciler re-enqueues a run that is still QUEUED.
START_PATIENCE = 120.0
# A stopping worker retries a failed start this long at most (a retry of a start that took
# effect gets the same attempt back, to hand back); then it leaves the message uncommitted.
STOPPING_START_PATIENCE = RPC_TIMEOUT


class Unanswered(Exception):
    """The message is left unanswered, its offset not committed, so another worker gets it:
    the worker is stopping."""


class StartCalls:
    """StartAttempt for this worker's messages (``permits``: the start permits, whose queue
    says whether a start asked ahead may wait for company)."""

    def __init__(
        self,
        calls: AttemptCalls,
        worker_id: str,
        clock: ServerClock,
        permits: WeightedSlots,
        stopping: asyncio.Event,
        tally: AttemptTally,
        incarnation: str,
    ) -> None:
        self._calls = calls
        self._worker_id = worker_id
        self._incarnation = incarnation
        self._clock = clock
        self._permits = permits
        self._stopping = stopping
        self._tally = tally

    async def start(
        self,
        run_id: str,
        delivery_id: str,
        ahead_of: int | None = None,
        *,
        nominal_time: int | None = None,
    ) -> Started:
        """The run's attempt (``ahead_of``: the run's time in nanoseconds, ahead of which it may
        be started; its answer then says when to call; ``nominal_time``: the run's, as its
        dispatch said it), or TooEarly, StartRefused, Unanswered."""
        request = start_request(
            run_id,
            f"{delivery_id}@{self._incarnation}",
            self._worker_id,
            ahead_of is not None,
            nominal_time,
        )
        backoff = DoublingBackoff(FIRST_RETRY, MAX_RETRY)
        loop = asyncio.get_running_loop()
        give_up = loop.time() + START_PATIENCE
        stopping_give_up = math.inf
        while True:
            sent_at = loop.time()
            try:
                response = await self._calls.start(request, self._slack(ahead_of))
            except aio.AioRpcError as error:
                stopping_give_up = self._failed(error, run_id, give_up, stopping_give_up)
                await asyncio.sleep(backoff.next())
                continue
            self._clock.observe_ns(server_time(response))
            try:
                return started_from(response, sent_at)
            except StartRefused as refused:
                self._refused(run_id, refused.reason)
                raise

    def _slack(self, ahead_of: int | None) -> float:
        """How long a start may wait for company: one asked ahead of its time, unless it took
        the last start permit or others wait for one. No company can join it then, and its
        batch lingering would hold every permit: starts went in waves of the permits a linger
        apart, 900 a second at most where 1,600 were due."""
        if ahead_of is None or self._permits.contended or self._permits.exhausted:
            return 0.0
        return self._clock.seconds_until_ns(ahead_of)

    def _failed(
        self, error: aio.AioRpcError, run_id: str, give_up: float, stopping_give_up: float
    ) -> float:
        """After a failed start: StartRefused for a permanent failure or past its patience,
        Unanswered for a stopping worker past its own; else when a stopping worker gives up."""
        now = asyncio.get_running_loop().time()
        code = error.code()
        if self._stopping.is_set() and code not in PERMANENT:
            if stopping_give_up == math.inf:
                stopping_give_up = now + STOPPING_START_PATIENCE
            elif now > stopping_give_up:
                raise Unanswered
        if code in PERMANENT or now > give_up:
            log.error(
                "start refused by the scheduler; message dropped",
                extra={
                    "action": "start_rejected",
                    "run_id": run_id,
                    "code": code.name,
                    "error": error.details(),
                },
            )
            self._tally.count(tally.REFUSED)
            raise StartRefused
        log.warning(
            "start failed; asking again",
            extra={"action": "start_retry", "run_id": run_id, "code": code.name},
        )
        return stopping_give_up

    def _refused(self, run_id: str, reason: str) -> None:
        self._tally.count(tally.REFUSED)
        log.info(
            "start refused; message dropped",
            extra={"action": "start_refused", "run_id": run_id, "reason": reason},
        )
