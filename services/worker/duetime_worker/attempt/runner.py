"""A started attempt run: its target called under its lease (``lease``), with the heartbeats
renewing it, and its end handed to the ``reporter``.

An attempt started ahead of its run's time (its answer says when to call) is signed then, not
at a herd's instant (``HttpCaller.sign_ahead``), and waits: shortly before its call time
(``PRE_CALL_BEAT``; the scheduler takes a beat from 4 s before the call on as the sign that the
call may have begun) a heartbeat is sent and answered (a job paused or deleted meanwhile
cancels it: it is handed back unrun), and the call begins at its time by the server's clock,
never before; the report carries when it began. Otherwise it is the same attempt.

An at-most-once call begins only once the scheduler has acknowledged its announcement
(``Heartbeats.announce_call``). A second delivery of an attempt this worker runs or ran is
dropped (``RecentKeys``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable

from opentelemetry.trace import SpanKind, Status, StatusCode

from duetime_core.records import AttemptOutcome
from duetime_infra.tracecontext import ATTEMPT, RUN_ID, TRACER
from duetime_worker.attempt import tally
from duetime_worker.attempt.heartbeats import Heartbeats
from duetime_worker.attempt.lease import watch
from duetime_worker.attempt.lifecycle import Attempt, Started
from duetime_worker.attempt.reporter import Reporter
from duetime_worker.attempt.server_clock import ServerClock
from duetime_worker.attempt.tally import AttemptTally
from duetime_worker.herd.governor import Herd
from duetime_worker.herd.knobs import PRE_CALL_BEAT
from duetime_worker.herd.slots import ANYONE, Flow, Reservation
from duetime_worker.herd.timers import Deadlines
from duetime_worker.targets.container.launcher import Launcher
from duetime_worker.targets.http.caller import HttpCaller
from duetime_worker.targets.http.signed_ahead import SignedAhead
from duetime_worker.targets.outcome import LEASE_LAPSED, NOT_BEGUN, LeaseLapsed, Outcome
from duetime_worker.targets.run import ContainerTask, HttpCall, TargetRun

log = logging.getLogger(__name__)

# Used when a run carries no attempt timeout.
DEFAULT_ATTEMPT_TIMEOUT = 3600.0
# Attempts remembered as executed here, to drop a second delivery of one.
EXECUTED_MEMORY = 100_000
SHUTTING_DOWN = "the worker is shutting down"
# The kinds of target, as the call's span names them.
_KINDS: dict[type, str] = {HttpCall: "http", ContainerTask: "container"}


def _nothing() -> None:
    pass


class RecentKeys:
    """The last ``capacity`` keys seen."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._keys: OrderedDict[tuple[str, int], None] = OrderedDict()

    def first(self, key: tuple[str, int]) -> bool:
        """Records ``key``; True unless it was already among the recent ones."""
        if key in self._keys:
            return False
        self._keys[key] = None
        if len(self._keys) > self._capacity:
            self._keys.popitem(last=False)
        return True


class Runner:
    def __init__(
        self,
        heartbeats: Heartbeats,
        http: HttpCaller,
        launcher: Launcher,
        reporter: Reporter,
        *,
        clock: ServerClock,
        herd: Herd,
        stopping: asyncio.Event,
        tally: AttemptTally,
    ) -> None:
        self._heartbeats = heartbeats
        self._http = http
        self._launcher = launcher
        self._reporter = reporter
        self._clock = clock
        self._herd = herd
        self._stopping = stopping
        self._tally = tally
        # The waits of attempts started ahead until shortly before their call, under one
        # timer; all ended at once when stopping, to hand those attempts back unrun.
        self._held_ahead = Deadlines()
        self._executed = RecentKeys(EXECUTED_MEMORY)

    def stop(self) -> None:
        """Attempts waiting for their call's time are handed back unrun."""
        self._held_ahead.end_all()

    async def run(
        self,
        started: Started,
        call_ended: Callable[[], None],
        reservation: Reservation | None = None,
        flow: Flow = ANYONE,
    ) -> None:
        """Runs the attempt and reports it; ``call_ended`` once the target call is over (the
        report that follows needs no execution slot). Its call waits for connections as
        ``flow``."""
        run = started.run
        if not self._first_execution(run.run_id, started.attempt):
            return
        timeout = started.timeout or DEFAULT_ATTEMPT_TIMEOUT
        since = time.monotonic()
        self._tally.count(tally.STARTED)
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "attempt started",
                extra={
                    "action": "attempt_started",
                    "run_id": run.run_id,
                    "attempt": started.attempt,
                },
            )
        attempt = Attempt.of(started)
        call = self._call(attempt, started, timeout, reservation, flow)
        attempt.run(asyncio.create_task(call))
        self._heartbeats.add(attempt)
        try:
            await watch(attempt, self._herd.leases)
            call_ended()
            await self._reporter.report(attempt, since)
        finally:
            attempt.task.cancel()
            self._heartbeats.remove(attempt)

    async def hand_back_unrun(self, started: Started) -> None:
        """Reports an attempt started for this worker as HANDED_BACK without running it."""
        run_id, number = started.run.run_id, started.attempt
        if not self._executed.first((run_id, number)):
            return  # a replay of an attempt this worker runs or ran: that one reports it
        log.info(
            "attempt handed back unrun",
            extra={"action": "attempt_handed_back_unrun", "run_id": run_id, "attempt": number},
        )
        outcome = Outcome.handed_back(SHUTTING_DOWN, call=NOT_BEGUN)
        await self._reporter.complete(run_id, number, outcome, None, started.nominal_time)

    def _first_execution(self, run_id: str, number: int) -> bool:
        """False for the same delivery again (redelivered after a rebalance, or published
        twice): its start answered with an attempt this worker runs or already ran (the answer
        may arrive after the first execution ended). It is counted and dropped."""
        if self._executed.first((run_id, number)):
            return True
        self._tally.count(tally.DUPLICATES)
        log.info(
            "duplicate delivery of an attempt dropped",
            extra={"action": "duplicate_delivery", "run_id": run_id, "attempt": number},
        )
        return False

    async def _call(
        self,
        attempt: Attempt,
        started: Started,
        limit: float,
        reservation: Reservation | None,
        flow: Flow,
    ) -> Outcome:
        """The attempt's task: for one started ahead, its signatures (``_sign_ahead``) and its
        wait for its time (``_call_time``); then the target call, in a client span whose context
        is the ``traceparent`` it sends, and at most once only once the scheduler acknowledged
        it."""
        sent = _nothing  # an HTTP call's request went out
        run = started.run
        ahead = None
        if started.call_time is not None and not attempt.began:
            ahead = await self._sign_ahead(run, attempt.attempt, started.call_time)
            if not await self._call_time(attempt, started.call_time):
                return Outcome.handed_back(SHUTTING_DOWN, call=NOT_BEGUN)
            sent = self._herd.call_due()
            attempt.call_begins(self._clock.now_ns())
        try:
            if attempt.at_most_once and not await self._announced(attempt, limit):
                return Outcome.handed_back(
                    f"not called: the call's announcement was not acknowledged within {limit:g} s",
                    call=NOT_BEGUN,
                )
            kind = _KINDS.get(type(run.target))
            with TRACER.start_as_current_span(
                "call target",
                kind=SpanKind.CLIENT,
                attributes={
                    RUN_ID: run.run_id,
                    ATTEMPT: attempt.attempt,
                    "duetime.target.kind": str(kind),
                },
            ) as span:
                outcome = await self._call_target(
                    attempt, run, limit, reservation, sent, flow, ahead
                )
                if outcome.result is not AttemptOutcome.SUCCEEDED:
                    span.set_status(Status(StatusCode.ERROR, outcome.error))
                return outcome
        finally:
            sent()

    async def _sign_ahead(self, run: TargetRun, attempt: int, call_time: int) -> SignedAhead | None:
        """The call's signatures made now, ahead of its time, its team's keys warmed for then;
        None (signed at its send) when the keys are not in hand by its beat before the call."""
        within = self._clock.seconds_until_ns(call_time)
        try:
            async with asyncio.timeout(within - PRE_CALL_BEAT):
                return await self._http.sign_ahead(run, attempt, within)
        except TimeoutError:
            return None

    async def _call_time(self, attempt: Attempt, call_time: int) -> bool:
        """Waits for the call time of an attempt started ahead: a heartbeat answered shortly
        before it (a job paused or deleted since the start cancels the attempt then), then the
        time itself by the server's clock, never before. False when stopping before the beat:
        the attempt is handed back unrun, for another worker, rather than holding the shutdown
        until its time."""
        before = self._clock.seconds_until_ns(call_time) - PRE_CALL_BEAT
        if before > 0 and not self._stopping.is_set():
            loop = asyncio.get_running_loop()
            waiter = loop.create_future()
            self._held_ahead.add(waiter, loop.time() + before)
            await waiter
        if self._stopping.is_set():
            return False
        await self._heartbeats.fresh(attempt.key)
        # Asked again after each wait: the estimate of the server's clock may move meanwhile.
        while (left := self._clock.seconds_until_ns(call_time)) > 0:  # noqa: ASYNC110
            await asyncio.sleep(left)
        return True

    async def _announced(self, attempt: Attempt, limit: float) -> bool:
        try:
            async with asyncio.timeout(limit):
                return await self._heartbeats.announce_call(attempt.key)
        except TimeoutError:
            return False

    async def _call_target(
        self,
        attempt: Attempt,
        run: TargetRun,
        limit: float,
        reservation: Reservation | None,
        sent: Callable[[], None],
        flow: Flow,
        ahead: SignedAhead | None,
    ) -> Outcome:
        """The call, the attempt's lease checked before anything of it is sent or launched
        (an HTTP call's signatures made ``ahead`` used if they still fit).
        An HTTP call is bounded by its own deadlines (its turn, and reqwest's total timeout
        from connect to the body's last byte); a launch by its timeout and the launcher's
        stop, with a backstop here. The scheduler closes an attempt that outlives its timeout
        and grace in any case."""
        number, check = attempt.attempt, attempt.check_lease
        try:
            if isinstance(run.target, HttpCall):
                return await self._http.call(run, number, limit, check, sent, flow, ahead)
            if isinstance(run.target, ContainerTask):
                async with asyncio.timeout(limit + 1 + self._launcher.stop_seconds):
                    return await self._launcher.launch(run, number, limit, reservation, check)
        except LeaseLapsed:
            return Outcome.handed_back(LEASE_LAPSED, call=NOT_BEGUN)
        except TimeoutError:
            return Outcome.timed_out(f"no result within {limit:g} s")
        return Outcome.failed("unknown target kind None", retryable=False, call=NOT_BEGUN)
