"""How an attempt ended, told to the scheduler (CompleteAttempt, batched), counted and logged;
or, when the lease rule says so, not told at all (``Lease.report_dropped``).

Every report says how far the call got, so the scheduler never retries an attempt that may
have reached its target when its job asked for at most once. The success of an attempt started
ahead of its run's time may wait a little while the worker's calls due are still going out (the
``herd`` governor says how long): only those wait, since their job's overlap policy is ALLOW and
no other run's start decides on their end.
"""

from __future__ import annotations

import asyncio
import logging
import time

import grpc
from grpc import aio

from duetime_core.backoff import DoublingBackoff
from duetime_core.records import AttemptOutcome
from duetime_worker.attempt import tally
from duetime_worker.attempt.lifecycle import Attempt
from duetime_worker.attempt.scheduler_client import FIRST_RETRY, MAX_RETRY, PERMANENT, AttemptCalls
from duetime_worker.attempt.tally import AttemptTally
from duetime_worker.attempt.wire import complete_request
from duetime_worker.herd.governor import Herd
from duetime_worker.targets.outcome import Outcome

log = logging.getLogger(__name__)

# How long a finished attempt's report is retried through scheduler outages.
REPORT_PATIENCE = 60.0
_TALLIES = {
    AttemptOutcome.SUCCEEDED: tally.SUCCEEDED,
    AttemptOutcome.FAILED: tally.FAILED,
    AttemptOutcome.TIMED_OUT: tally.TIMED_OUT,
    AttemptOutcome.CANCELLED: tally.CANCELLED,
    AttemptOutcome.HANDED_BACK: tally.HANDED_BACK,
}
_FINISHED_LEVELS = {
    AttemptOutcome.SUCCEEDED: logging.DEBUG,
    AttemptOutcome.FAILED: logging.WARNING,
    AttemptOutcome.TIMED_OUT: logging.WARNING,
}


class Reporter:
    def __init__(
        self, calls: AttemptCalls, worker_id: str, herd: Herd, tally: AttemptTally
    ) -> None:
        self._calls = calls
        self._worker_id = worker_id
        self._herd = herd
        self._tally = tally

    async def report(self, attempt: Attempt, since: float) -> None:
        """Once the attempt's call is over: reports its outcome, counted and logged (``since``:
        when the attempt began, on the monotonic clock), unless the lease rule drops it."""
        self._herd.report_begins()
        try:
            if attempt.report_dropped():
                self._lease_lost(attempt, since)
                return
            outcome = attempt.outcome()
            if outcome.result is AttemptOutcome.SUCCEEDED and attempt.call_time is not None:
                left = attempt.lease_deadline - asyncio.get_running_loop().time()
                await self._herd.success_report_held(left)
            await self.complete(
                attempt.run_id, attempt.attempt, outcome, attempt.call_time, attempt.nominal_time
            )
            self._finished(attempt, outcome, since)
        finally:
            self._herd.report_ends()

    def _lease_lost(self, attempt: Attempt, since: float) -> None:
        self._tally.count(tally.LEASE_LOST)
        log.warning(
            "attempt abandoned without a report: its lease was lost",
            extra={
                "action": "lease_lost",
                "run_id": attempt.run_id,
                "attempt": attempt.attempt,
                "reason": attempt.cancel_reason or "lease ran out without a renewal",
                "seconds": round(time.monotonic() - since, 3),
            },
        )

    def _finished(self, attempt: Attempt, outcome: Outcome, since: float) -> None:
        self._tally.count(_TALLIES.get(outcome.result, tally.FAILED))
        # A success is only counted (its line is DEBUG); anything else is logged with its
        # run id, a failure as a WARNING.
        level = _FINISHED_LEVELS.get(outcome.result, logging.INFO)
        if not log.isEnabledFor(level):
            return
        log.log(
            level,
            "attempt finished",
            extra={
                "action": "attempt_finished",
                "run_id": attempt.run_id,
                "attempt": attempt.attempt,
                "result": f"ATTEMPT_RESULT_{outcome.result.value}",
                "retryable": outcome.retryable,
                "error": outcome.error,
                "seconds": round(time.monotonic() - since, 3),
            },
        )

    async def complete(
        self,
        run_id: str,
        attempt: int,
        outcome: Outcome,
        call_time: int | None = None,
        nominal_time: int | None = None,
    ) -> None:
        """Reports the attempt's outcome (``call_time``: when an attempt started ahead began
        its call, in nanoseconds by the server's clock; ``nominal_time``: its run's), retried
        through outages."""
        request = complete_request(run_id, outcome, self._worker_id, call_time, nominal_time)
        backoff = DoublingBackoff(FIRST_RETRY, MAX_RETRY)
        deadline = time.monotonic() + REPORT_PATIENCE
        while True:
            try:
                await self._calls.complete(request, attempt)
                return
            except aio.AioRpcError as error:
                if not self._retried(error, run_id, attempt, deadline):
                    return
                await asyncio.sleep(backoff.next())

    def _retried(self, error: aio.AioRpcError, run_id: str, attempt: int, deadline: float) -> bool:
        """Whether a failed report is sent again: not once refused, nor past its patience."""
        code = error.code()
        if code == grpc.StatusCode.ABORTED or code in PERMANENT:
            log.warning(
                "attempt report refused; dropped",
                extra={
                    "action": "report_refused",
                    "run_id": run_id,
                    "attempt": attempt,
                    "code": code.name,
                    "error": error.details(),
                },
            )
            return False
        if time.monotonic() > deadline:
            log.error(
                "attempt report not delivered; the lease will expire",
                extra={"action": "report_lost", "run_id": run_id, "attempt": attempt},
            )
            return False
        return True
