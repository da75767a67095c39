"""One dispatch message, start to finish: StartAttempt (waiting on the server's clock while it is
too early), run the target under the heartbeat stream, then CompleteAttempt with the fencing
token in ``duetime-attempt`` metadata.

A run due within ``EARLY_AHEAD`` has its attempt asked for ahead of its time (``early``): its
start then happens before a herd's instant, not at it. The attempt is held under an early
permit (not an execution slot); shortly before its call time a heartbeat is sent and answered
(a job paused or deleted meanwhile cancels it: it is handed back unrun), and the call begins
at its time by the server's clock, never before; the report carries when it began.

The worker enforces its own lease: when the attempt's local lease deadline passes without a
renewal (the scheduler unreachable, the worker frozen), the target call is given up (a local
process killed; an HTTP request, which pyreqwest cannot abort, runs on to its own timeout and
its answer is dropped) and nothing is reported, because the scheduler closes the attempt at
the same moment and may already have given the run to another worker. An attempt the scheduler
says is closed is dropped the same way; one handed back on shutdown is reported HANDED_BACK.

Stopping (``Executor.stop``) starts nothing more: messages held until their time or waiting
for a slot end unanswered (their offsets stay uncommitted, so another worker gets them), and an
attempt whose start is answered STARTED from then on is handed back at once without running.
A start already sent is never abandoned, even when its message's task is cancelled (a stopping
worker, a revoked partition): the request may be on its way in a batch, and an attempt the
scheduler started for this worker and nobody runs would stay open until its lease ran out, the
run's redelivery refused meanwhile (ALREADY_STARTED) and the attempt then counted as failed.
An attempt so started is handed back only when the worker is stopping; after a revoke it runs
here (see ``_start_seen_through``).

An at-most-once run's call begins only once the scheduler has acknowledged its announcement
(``Heartbeats.announce_call``), and every report says how far the call got, so the scheduler
never retries an attempt that may have reached its target.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import partial

import grpc
from google.protobuf.timestamp_pb2 import Timestamp
from grpc import aio
from opentelemetry.trace import SpanKind, Status, StatusCode

from duetime.events.v1.events_pb2 import TARGET_KIND_CONTAINER, RunDispatch
from duetime.worker.v1 import worker_service_pb2 as pb
from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_core.backoff import DoublingBackoff
from duetime_infra.tracecontext import ATTEMPT, RUN_ID, TRACER
from duetime_worker.attempt import tally
from duetime_worker.attempt.heartbeats import Heartbeats
from duetime_worker.attempt.lease import watch
from duetime_worker.attempt.lifecycle import Attempt, Started
from duetime_worker.attempt.scheduler_client import AttemptCalls
from duetime_worker.attempt.server_clock import ServerClock
from duetime_worker.attempt.tally import AttemptTally
from duetime_worker.herd.slots import ANYONE, Flow, Permits, SlotsClosed, WeightedSlots
from duetime_worker.herd.state import CallBacklog
from duetime_worker.herd.timers import Deadlines
from duetime_worker.shielding import despite_cancellation
from duetime_worker.targets.container.launcher import Launcher, Reservation
from duetime_worker.targets.http.caller import HttpCaller
from duetime_worker.targets.outcome import (
    LEASE_LAPSED,
    NOT_BEGUN,
    LeaseLapsed,
    Outcome,
)

log = logging.getLogger(__name__)

ATTEMPT_METADATA_KEY = "duetime-attempt"
RPC_TIMEOUT = 10.0
# Used when a run carries no attempt timeout.
DEFAULT_ATTEMPT_TIMEOUT = 3600.0
# How long before a run's time its attempt is asked for ahead (the scheduler allows up to
# 30 s, for runs of jobs whose overlap policy is ALLOW): the call then needs no start of its
# own at the run's time. A herd claimed ahead (its look-ahead grown up to a minute) has its
# starts spread over this stretch instead of crowding the seconds before its instant.
EARLY_AHEAD = 20.0
# An attempt started ahead sends a heartbeat this long before its call, and calls only once
# that beat is answered: a job paused or deleted meanwhile is a CANCEL then. The scheduler takes
# a beat from 2 s before the call on as the sign that the call may have begun; a second ahead
# leaves a herd's beats (each listing every attempt the worker holds) time to be answered
# before the instant instead of holding its calls back.
PRE_CALL_BEAT = 1.0
# Longest single wait on TOO_EARLY before asking again.
MAX_EARLY_WAIT = 60.0
# After a TOO_EARLY answer the message waits at least this long, doubling while the answers
# repeat (up to the cap): a clock estimate gone wrong costs a few round trips, not a flood.
FIRST_EARLY_RETRY = 0.001
MAX_EARLY_RETRY = 0.5
# A start or report that failed is sent again after FIRST_RETRY seconds, doubling up to
# MAX_RETRY (exact delays, no jitter).
FIRST_RETRY = 0.1
MAX_RETRY = 5.0
# How long a finished attempt's report is retried through scheduler outages.
REPORT_PATIENCE = 60.0
# How long at most the success of an attempt started ahead waits for the worker's call backlog
# to clear (see ``herd.state``), and at most this share of the lease it has left. Only those wait:
# their job's overlap policy is ALLOW, so no other run's start decides on their end.
REPORT_HOLD = 5.0
REPORT_HOLD_LEASE_SHARE = 0.25
# How long a start that keeps failing (not TOO_EARLY) is retried before the message is dropped:
# holding it longer would stop its partition's commits and a concurrency slot for good, and the
# relay's reconciler re-enqueues a run that is still QUEUED.
START_PATIENCE = 120.0
# Answers that will not change if asked again: the message is dropped.
_PERMANENT = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.OUT_OF_RANGE,
    grpc.StatusCode.UNIMPLEMENTED,
}
_RESULT_NAMES = {v: k for k, v in pb.AttemptResult.items()}
_TALLIES = {
    pb.ATTEMPT_RESULT_SUCCEEDED: tally.SUCCEEDED,
    pb.ATTEMPT_RESULT_FAILED: tally.FAILED,
    pb.ATTEMPT_RESULT_TIMED_OUT: tally.TIMED_OUT,
    pb.ATTEMPT_RESULT_CANCELLED: tally.CANCELLED,
    pb.ATTEMPT_RESULT_HANDED_BACK: tally.HANDED_BACK,
}
_FINISHED_LEVELS = {
    pb.ATTEMPT_RESULT_SUCCEEDED: logging.DEBUG,
    pb.ATTEMPT_RESULT_FAILED: logging.WARNING,
    pb.ATTEMPT_RESULT_TIMED_OUT: logging.WARNING,
}
# Attempts remembered as executed here, to drop a second delivery of one.
EXECUTED_MEMORY = 100_000
# A stopping worker retries a failed start this long at most (a retry of a start that took
# effect gets the same attempt back, to hand back); then it leaves the message uncommitted.
STOPPING_START_PATIENCE = RPC_TIMEOUT
SHUTTING_DOWN = "the worker is shutting down"


def _nothing() -> None:
    pass


class Unanswered(enum.Enum):
    """Why a message is left unanswered (its offset not committed, so another worker gets
    it): ``STOPPING``, a start given up while the worker is stopping."""

    STOPPING = enum.auto()


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


def _once(action: Callable[[], None]) -> Callable[[], None]:
    """``action``, done the first time the result is called and never again."""
    done = False

    def once() -> None:
        nonlocal done
        if not done:
            done = True
            action()

    return once


class Slot:
    """One execution slot, given back once: when the target call ends, or at the latest when
    the message is done with."""

    def __init__(self, slots: WeightedSlots, dispatch: RunDispatch) -> None:
        self._slots = slots
        self._flow = Flow.of(dispatch)
        self._held = False

    async def __aenter__(self) -> Slot:
        await self._slots.take(self._flow)
        self._held = True
        return self

    async def __aexit__(self, *_: object) -> None:
        self.release()

    def release(self) -> None:
        if self._held:
            self._held = False
            self._slots.release()


class Executor:
    def __init__(
        self,
        stub: worker_service_pb2_grpc.WorkerServiceAsyncStub,
        worker_id: str,
        metadata: Sequence[tuple[str, str]],
        heartbeats: Heartbeats,
        http: HttpCaller,
        launcher: Launcher,
        *,
        calls: AttemptCalls | None = None,
        slots: int = 64,
        starting: int = 256,
        early: int = 0,
    ) -> None:
        self._stub = stub
        self._calls = calls or AttemptCalls(stub, metadata, RPC_TIMEOUT)
        # Execution slots: a message waiting for its effective time does not hold one.
        self._slots = WeightedSlots(slots)
        # Start permits: held while a start is asked for, so the queues behind them (start
        # batches, the scheduler) stay short and the fair queue in front of them decides who
        # goes first.
        self._starting = WeightedSlots(starting)
        # Attempts started ahead of their runs' time, held until then: bounded apart from the
        # execution slots, which go to runs whose time has come, with a reserve for the teams
        # holding few.
        self._early = Permits(early)
        self._backlog = CallBacklog()
        # The lease watches' deadlines (``_run_within_lease``), under one timer.
        self._leases = Deadlines()
        # The waits of attempts started ahead until shortly before their call, under one
        # timer; all ended at once when stopping, to hand those attempts back unrun.
        self._held_ahead = Deadlines()
        # Attempts whose call is over and whose report is not yet done.
        self._reporting = 0
        self._clock = ServerClock()
        self._executed = RecentKeys(EXECUTED_MEMORY)
        self._worker_id = worker_id
        # This process's own: a delivery asked again by it is replayed its attempt, while a
        # worker restarted under the same id (a pod's container) is refused the attempts of
        # its predecessor, whose calls may have begun; they end at their leases and retry.
        self._incarnation = uuid.uuid4().hex[:12]
        self._metadata = tuple(metadata)
        self._heartbeats = heartbeats
        heartbeats.hold_full_beats(self._busy)
        self._http = http
        self._launcher = launcher
        self._stopping = asyncio.Event()
        # Per-run starts and successes are counted, not logged: see ``tally``.
        self.tally = AttemptTally()

    def _busy(self) -> bool:
        """Busy with a herd: calls wait to go out, or reports to be sent (full heartbeats wait
        meanwhile); never once stopping."""
        return not self._stopping.is_set() and (self._backlog.holding or self._reporting > 0)

    def stop(self) -> None:
        """Nothing starts from now on (see the module's doc); running attempts go on, for the
        consumer's drain to wait for or hand back."""
        self._stopping.set()
        self._held_ahead.end_all()
        self._backlog.close()
        self._slots.close()
        self._starting.close()

    async def _hold(self, seconds: float) -> bool:
        """Waits ``seconds``, unless stopping or stopped meanwhile; False when stopping."""
        if seconds > 0 and not self._stopping.is_set():
            try:
                async with asyncio.timeout(seconds):
                    await self._stopping.wait()
            except TimeoutError:
                pass
        return not self._stopping.is_set()

    async def process(
        self, dispatch: RunDispatch, delivery_id: str, answered: Callable[[], None]
    ) -> None:
        """Handles one message. ``answered`` is called once StartAttempt gave its final answer
        (started or refused), after which the message's offset may be committed."""
        # The consumer runs this in the message's trace context: the run's trace goes on here.
        with TRACER.start_as_current_span(
            "consume run",
            kind=SpanKind.CONSUMER,
            attributes={RUN_ID: dispatch.run_id, "duetime.delivery_id": delivery_id},
        ):
            not_before, least = dispatch.effective_time, 0.0
            early_retries = DoublingBackoff(FIRST_EARLY_RETRY, MAX_EARLY_RETRY)
            early = self._early.limit > 0 and dispatch.target_kind != TARGET_KIND_CONTAINER
            while True:
                # Held until its time (by the server's clock, as estimated) without a slot, or
                # until a little before it to start its attempt ahead.
                ahead = EARLY_AHEAD if early else 0.0
                wait = max(self._clock.seconds_until(not_before) - ahead, least)
                if not await self._hold(min(wait, MAX_EARLY_WAIT)):
                    return  # stopping: unanswered, so the message goes to another worker
                if (
                    early
                    and self._clock.seconds_until(not_before) > 0
                    and self._early.take(dispatch.team)
                ):
                    again = await self._run_early(dispatch, delivery_id, answered)
                    early = False  # answered TOO_EARLY: this run is started at its time
                else:
                    again = await self._run_when_due(dispatch, delivery_id, answered)
                if again is None:
                    return
                not_before = again
                least = early_retries.next()

    async def _run_when_due(
        self, dispatch: RunDispatch, delivery_id: str, answered: Callable[[], None]
    ) -> Timestamp | None:
        """Starts and runs the attempt once a slot is free; for TOO_EARLY, when to ask again."""
        reservation = await self._reserve(dispatch)
        if isinstance(reservation, Unanswered):
            return None  # stopping while waiting for the launcher: unanswered, as when held
        try:
            async with Slot(self._slots, dispatch) as slot:
                async with Slot(self._starting, dispatch):
                    started = await self._start_seen_through(dispatch.run_id, delivery_id)
                if isinstance(started, Timestamp):  # too early: wait again, no slot
                    return started
                if isinstance(started, Unanswered):
                    return None
                answered()
                if started is None:
                    return None
                if self._stopping.is_set():
                    await self._hand_back_unrun(*started)
                    return None
                await self._execute(
                    *started,
                    call_ended=slot.release,
                    reservation=reservation,
                    flow=Flow.of(dispatch),
                )
                return None
        except SlotsClosed:
            return None  # stopping while waiting for a slot: unanswered, as when held
        finally:
            if reservation is not None:
                reservation.release()

    async def _run_early(
        self, dispatch: RunDispatch, delivery_id: str, answered: Callable[[], None]
    ) -> Timestamp | None:
        """Starts the attempt ahead of its run's time under an early permit, and runs it at
        that time; TOO_EARLY (the scheduler would not start this run ahead) gives the permit
        back and says when to ask again."""
        try:
            async with Slot(self._starting, dispatch):
                started = await self._start_seen_through(
                    dispatch.run_id, delivery_id, ahead_of=dispatch.effective_time
                )
        except SlotsClosed:
            self._early.release(dispatch.team)
            return None
        except BaseException:
            # Cancelled waiting for a start permit, or with no attempt started (a rebalance
            # gives up every message not yet answered): the permit goes back.
            self._early.release(dispatch.team)
            raise
        if isinstance(started, Timestamp) or started is None or isinstance(started, Unanswered):
            self._early.release(dispatch.team)
            if not isinstance(started, Timestamp | Unanswered):
                answered()
            return started if isinstance(started, Timestamp) else None
        answered()
        release = _once(partial(self._early.release, dispatch.team))
        try:
            if self._stopping.is_set():
                await self._hand_back_unrun(*started)
                return None
            await self._execute(*started, call_ended=release, flow=Flow.of(dispatch))
            return None
        finally:
            release()

    async def _reserve(self, dispatch: RunDispatch) -> Reservation | Unanswered | None:
        """For a container target, the launcher's permit, waited for before the attempt is
        started: waiting after the start would count against the attempt's timeout and lease
        (a burst of long processes had the last ones time out without running). None when the
        message does not say its target is a container (an HTTP target, an older writer);
        ``Unanswered.STOPPING`` when stopping meanwhile."""
        if dispatch.target_kind != TARGET_KIND_CONTAINER:
            return None
        reserving = asyncio.ensure_future(self._launcher.reserve(Flow.of(dispatch)))
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({reserving, stopping}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # cancelled: a permit taken meanwhile goes back
            reserving.cancel()
            if reserving.done() and not reserving.cancelled():
                reserving.result().release()
            raise
        finally:
            stopping.cancel()
        if not reserving.done():
            reserving.cancel()
            return Unanswered.STOPPING
        if self._stopping.is_set():
            reserving.result().release()
            return Unanswered.STOPPING
        return reserving.result()

    async def _start_seen_through(
        self, run_id: str, delivery_id: str, ahead_of: Timestamp | None = None
    ) -> tuple[pb.StartAttemptResponse, float] | Timestamp | Unanswered | None:
        """``_start``, seen through to its answer even when this task is cancelled meanwhile.
        Cancelled while stopping, an attempt it started is handed back before the cancellation
        goes on (the message stays unanswered). Cancelled while not stopping (its partition
        was revoked), an attempt it started is kept and run: aiokafka rebalances eagerly, so
        every member joining or leaving the group revokes every partition, and handing those
        attempts back would spend the run's free hand-backs (a rolling deploy could dead-letter
        a run that never failed). The partition's next owner is refused ALREADY_STARTED for
        the redelivery and commits past it; this worker, given the partition back, replays the
        same attempt and drops it as a duplicate."""
        started, cancelled = await despite_cancellation(self._start(run_id, delivery_id, ahead_of))
        if cancelled:
            if isinstance(started, tuple) and not self._stopping.is_set():
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()  # the cancellation is answered by keeping the attempt
                return started
            if isinstance(started, tuple):
                await despite_cancellation(self._hand_back_unrun(*started))
            raise asyncio.CancelledError
        return started

    async def _hand_back_unrun(self, response: pb.StartAttemptResponse, _sent_at: float) -> None:
        """Reports an attempt started for this worker as HANDED_BACK without running it."""
        run_id, number = response.run.run_id, response.attempt
        if not self._executed.first((run_id, number)):
            return  # a replay of an attempt this worker runs or ran: that one reports it
        log.info(
            "attempt handed back unrun",
            extra={"action": "attempt_handed_back_unrun", "run_id": run_id, "attempt": number},
        )
        await self._complete(run_id, number, Outcome.handed_back(SHUTTING_DOWN, call=NOT_BEGUN))

    async def _start(
        self, run_id: str, delivery_id: str, ahead_of: Timestamp | None = None
    ) -> tuple[pb.StartAttemptResponse, float] | Timestamp | Unanswered | None:
        """The STARTED answer and the loop time its request was sent (the lease counts from
        there); for TOO_EARLY, when to ask again (server clock); None when the message is to be
        dropped; ``Unanswered.STOPPING`` when a stopping worker gave up asking. ``ahead_of``:
        the run's time, ahead of which the attempt may be started (its answer then says when to
        call)."""
        request = pb.StartAttemptRequest(
            run_id=run_id,
            delivery_id=f"{delivery_id}@{self._incarnation}",
            worker_id=self._worker_id,
            early=ahead_of is not None,
        )
        backoff = DoublingBackoff(FIRST_RETRY, MAX_RETRY)
        loop = asyncio.get_running_loop()
        give_up = loop.time() + START_PATIENCE
        stopping_give_up: float | None = None
        while True:
            sent_at = loop.time()
            try:
                # A start ahead of its time may wait for company, unless others wait for
                # start permits: then batches fill by themselves, and waiting holds permits.
                slack = 0.0
                if ahead_of is not None and not self._starting.contended:
                    slack = self._clock.seconds_until(ahead_of)
                response = await self._calls.start(request, slack)
            except aio.AioRpcError as error:
                if self._stopping.is_set() and error.code() not in _PERMANENT:
                    if stopping_give_up is None:
                        stopping_give_up = loop.time() + STOPPING_START_PATIENCE
                    elif loop.time() > stopping_give_up:
                        return Unanswered.STOPPING
                if error.code() in _PERMANENT or loop.time() > give_up:
                    log.error(
                        "start refused by the scheduler; message dropped",
                        extra={
                            "action": "start_rejected",
                            "run_id": run_id,
                            "code": error.code().name,
                            "error": error.details(),
                        },
                    )
                    self.tally.count(tally.REFUSED)
                    return None
                delay = backoff.next()
                log.warning(
                    "start failed; asking again",
                    extra={"action": "start_retry", "run_id": run_id, "code": error.code().name},
                )
                await asyncio.sleep(delay)
                continue
            self._clock.observe(response.server_time)
            if response.decision == pb.START_DECISION_TOO_EARLY:
                return response.effective_time
            if response.decision == pb.START_DECISION_STARTED:
                return response, sent_at
            self.tally.count(tally.REFUSED)
            log.info(
                "start refused; message dropped",
                extra={
                    "action": "start_refused",
                    "run_id": run_id,
                    "reason": response.refusal_reason,
                },
            )
            return None

    async def _execute(
        self,
        response: pb.StartAttemptResponse,
        sent_at: float,
        call_ended: Callable[[], None] = lambda: None,
        reservation: Reservation | None = None,
        flow: Flow = ANYONE,
    ) -> None:
        """Runs the attempt; ``call_ended`` once the target call is over (the report that
        follows needs no execution slot). Its call waits for connections as ``flow``."""
        run = response.run
        number = response.attempt
        if not self._first_execution(run.run_id, number):
            return
        timeout = run.attempt_timeout.ToTimedelta().total_seconds() or DEFAULT_ATTEMPT_TIMEOUT
        started = time.monotonic()
        self.tally.count(tally.STARTED)
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "attempt started",
                extra={"action": "attempt_started", "run_id": run.run_id, "attempt": number},
            )
        attempt = Attempt.of(Started(response, sent_at))
        if attempt.began:
            call = self._call(attempt, run, timeout, reservation, flow=flow)
        else:
            call = self._call_at(attempt, run, timeout, response.call_time, flow)
        attempt.run(asyncio.create_task(call))
        self._heartbeats.add(attempt)
        try:
            await watch(attempt, self._leases)
            call_ended()
            self._reporting += 1
            try:
                await self._report(attempt, started)
            finally:
                self._reporting -= 1
        finally:
            attempt.task.cancel()
            self._heartbeats.remove(attempt)

    def _first_execution(self, run_id: str, number: int) -> bool:
        """False for the same delivery again (redelivered after a rebalance, or published
        twice): its start answered with an attempt this worker runs or already ran (the answer
        may arrive after the first execution ended). It is counted and dropped."""
        if self._executed.first((run_id, number)):
            return True
        self.tally.count(tally.DUPLICATES)
        log.info(
            "duplicate delivery of an attempt dropped",
            extra={"action": "duplicate_delivery", "run_id": run_id, "attempt": number},
        )
        return False

    async def _report(self, active: Attempt, started: float) -> None:
        """Once the call is over: reports its outcome, counted and logged (``started``: when
        the attempt began, on the monotonic clock), unless the lease was lost meanwhile."""
        if active.report_dropped():
            self.tally.count(tally.LEASE_LOST)
            log.warning(
                "attempt abandoned without a report: its lease was lost",
                extra={
                    "action": "lease_lost",
                    "run_id": active.run_id,
                    "attempt": active.attempt,
                    "reason": active.cancel_reason or "lease ran out without a renewal",
                    "seconds": round(time.monotonic() - started, 3),
                },
            )
            return
        outcome = active.outcome()
        if outcome.result == pb.ATTEMPT_RESULT_SUCCEEDED and active.call_time is not None:
            left = active.lease_deadline - asyncio.get_running_loop().time()
            await self._backlog.passed(min(REPORT_HOLD, left * REPORT_HOLD_LEASE_SHARE))
        await self._complete(active.run_id, active.attempt, outcome, active.call_time)
        self.tally.count(_TALLIES.get(outcome.result, tally.FAILED))
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
                "run_id": active.run_id,
                "attempt": active.attempt,
                "result": _RESULT_NAMES.get(outcome.result, outcome.result),
                "retryable": outcome.retryable,
                "error": outcome.error,
                "seconds": round(time.monotonic() - started, 3),
            },
        )

    async def _call(
        self,
        attempt: Attempt,
        run: pb.RunSpec,
        limit: float,
        reservation: Reservation | None,
        sent: Callable[[], None] = _nothing,
        flow: Flow = ANYONE,
    ) -> Outcome:
        """The target call, in a client span whose context is the ``traceparent`` it sends;
        the attempt's lease is checked before anything of it is sent or launched, ``sent``
        runs once an HTTP request goes out; at most once, only once the scheduler
        acknowledged it. An HTTP call waits for its connection as ``flow``."""
        if attempt.at_most_once and not await self._announced(attempt, limit):
            return Outcome.handed_back(
                f"not called: the call's announcement was not acknowledged within {limit:g} s",
                call=NOT_BEGUN,
            )
        kind = run.target.WhichOneof("kind")
        with TRACER.start_as_current_span(
            "call target",
            kind=SpanKind.CLIENT,
            attributes={
                RUN_ID: run.run_id,
                ATTEMPT: attempt.attempt,
                "duetime.target.kind": str(kind),
            },
        ) as span:
            outcome = await self._call_target(attempt, run, kind, limit, reservation, sent, flow)
            if outcome.result != pb.ATTEMPT_RESULT_SUCCEEDED:
                span.set_status(Status(StatusCode.ERROR, outcome.error))
            return outcome

    async def _announced(self, attempt: Attempt, limit: float) -> bool:
        try:
            async with asyncio.timeout(limit):
                return await self._heartbeats.announce_call(attempt.key)
        except TimeoutError:
            return False

    async def _call_target(
        self,
        attempt: Attempt,
        run: pb.RunSpec,
        kind: str | None,
        limit: float,
        reservation: Reservation | None,
        sent: Callable[[], None],
        flow: Flow,
    ) -> Outcome:
        # An HTTP call is bounded by its own deadlines (its turn, and reqwest's total timeout
        # from connect to the body's last byte); a launch by its timeout and the launcher's
        # stop, with a backstop here. The scheduler closes an attempt that outlives its timeout
        # and grace in any case.
        number, check = attempt.attempt, attempt.check_lease
        try:
            if kind == "http":
                return await self._http.call(run, number, limit, check, sent, flow)
            if kind == "container":
                async with asyncio.timeout(limit + 1 + self._launcher.stop_seconds):
                    return await self._launcher.launch(run, number, limit, reservation, check)
        except LeaseLapsed:
            return Outcome.handed_back(LEASE_LAPSED, call=NOT_BEGUN)
        except TimeoutError:
            return Outcome.timed_out(f"no result within {limit:g} s")
        return Outcome.failed(f"unknown target kind {kind!r}", retryable=False, call=NOT_BEGUN)

    async def _call_at(
        self,
        attempt: Attempt,
        run: pb.RunSpec,
        limit: float,
        call_time: Timestamp,
        flow: Flow = ANYONE,
    ) -> Outcome:
        """An attempt started ahead of its time: a heartbeat answered shortly before the call
        (a job paused or deleted since the start cancels it then), then the call at its time
        by the server's clock, never before (and, at most once, once announced). Stopping
        before the beat hands it back unrun, for another worker, rather than holding the
        shutdown until its time."""
        before = self._clock.seconds_until(call_time) - PRE_CALL_BEAT
        if before > 0 and not self._stopping.is_set():
            loop = asyncio.get_running_loop()
            waiter = loop.create_future()
            self._held_ahead.add(waiter, loop.time() + before)
            await waiter
        if self._stopping.is_set():
            return Outcome.handed_back(SHUTTING_DOWN, call=NOT_BEGUN)
        await self._heartbeats.fresh(attempt.key)
        # Asked again after each wait: the estimate of the server's clock may move meanwhile.
        while (left := self._clock.seconds_until(call_time)) > 0:  # noqa: ASYNC110
            await asyncio.sleep(left)
        sent = self._backlog.due()
        attempt.call_begins(self._clock.now_ns())
        try:
            return await self._call(attempt, run, limit, None, sent, flow)
        finally:
            sent()

    async def _complete(
        self, run_id: str, attempt: int, outcome: Outcome, call_time: int | None = None
    ) -> None:
        """Reports the attempt's outcome (``call_time``: when an attempt started ahead began
        its call, in nanoseconds by the server's clock), retried through outages."""
        request = pb.CompleteAttemptRequest(
            run_id=run_id,
            result=outcome.result,
            error=outcome.error,
            retryable=outcome.retryable,
            worker_id=self._worker_id,
            call_progress=outcome.call,
        )
        if call_time is not None:
            request.call_time.FromNanoseconds(call_time)
        backoff = DoublingBackoff(FIRST_RETRY, MAX_RETRY)
        deadline = time.monotonic() + REPORT_PATIENCE
        while True:
            try:
                await self._calls.complete(request, attempt)
                return
            except aio.AioRpcError as error:
                code = error.code()
                if code == grpc.StatusCode.ABORTED or code in _PERMANENT:
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
                    return
                if time.monotonic() > deadline:
                    log.error(
                        "attempt report not delivered; the lease will expire",
                        extra={"action": "report_lost", "run_id": run_id, "attempt": attempt},
                    )
                    return
                await asyncio.sleep(backoff.next())
