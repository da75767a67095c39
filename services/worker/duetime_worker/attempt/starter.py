"""A dispatch message until its attempt is started: held until its run's time, then its attempt
asked for (``starts``) and handed to the ``runner``.

A message waits for its run's time by the server's clock (``server_clock``) holding nothing. A
run due within ``EARLY_AHEAD`` (``herd.knobs``) may have its attempt asked for ahead of that time
(the scheduler allows it for runs whose start obeys OVERLAP_POLICY_ALLOW; a dispatch that says
its run starts at its time, and a container's, is not asked for ahead): its start then happens
before a herd's instant, not at it, and a herd claimed ahead has its starts spread over the
stretch. Either way the message goes the same way (``_start_and_run``): it holds a place
until its call ends, asks for its attempt under a start permit (a start asked ahead gets one
only when no start whose time has come waits), is answered, and its attempt is run. The place
is an execution slot, waited for in fair order, or for a start ahead an early permit, taken
without waiting (``Permits``: bounded apart from the slots, which go to runs whose time has
come, with a reserve for the teams holding few; a run that finds every one taken asks nothing
and tries again a little later, until its time). Each place is a ``Reservation`` at its limit
(``herd.slots``), given back once.

Stopping starts nothing more: messages held until their time or waiting for a slot end
unanswered (their offsets stay uncommitted, so another worker gets them), and an attempt whose
start is answered STARTED from then on is handed back at once without running. A start already
sent is never abandoned, even when its message's task is cancelled (a stopping worker, a
revoked partition): the request may be on its way in a batch, and an attempt the scheduler
started for this worker and nobody runs would stay open until its lease ran out, the run's
redelivery refused meanwhile (ALREADY_STARTED) and the attempt then counted as failed. An
attempt so started is handed back only when the worker is stopping; after a revoke it runs
here (see ``_start_seen_through``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from opentelemetry.trace import SpanKind

from duetime_core.backoff import DoublingBackoff
from duetime_infra.tracecontext import RUN_ID, TRACER
from duetime_worker.attempt.lifecycle import Started, StartRefused, TooEarly
from duetime_worker.attempt.runner import Runner
from duetime_worker.attempt.server_clock import ServerClock
from duetime_worker.attempt.starts import StartCalls, Unanswered
from duetime_worker.herd.knobs import EARLY_AHEAD
from duetime_worker.herd.slots import (
    Flow,
    Permits,
    Reservation,
    SlotsClosed,
    WeightedSlots,
    reserved_ahead,
)
from duetime_worker.intake.dispatch import Dispatch
from duetime_worker.shielding import despite_cancellation
from duetime_worker.targets.container.launcher import Launcher

# Longest single wait on TOO_EARLY before asking again.
MAX_EARLY_WAIT = 60.0
# After a TOO_EARLY answer the message waits at least this long, doubling while the answers
# repeat (up to the cap): a clock estimate gone wrong costs a few round trips, not a flood.
FIRST_EARLY_RETRY = 0.001
MAX_EARLY_RETRY = 0.5
# A run that found every early permit taken tries again after this long, doubling up to the
# cap, until its time: a permit freed meanwhile still starts it ahead, at a few wake-ups a
# second for thousands of such runs.
FIRST_PERMIT_RETRY = 0.1
MAX_PERMIT_RETRY = 2.0


class Starter:
    def __init__(
        self,
        starts: StartCalls,
        runner: Runner,
        launcher: Launcher,
        *,
        clock: ServerClock,
        stopping: asyncio.Event,
        slots: WeightedSlots,
        starting: WeightedSlots,
        early: Permits,
    ) -> None:
        self._starts = starts
        self._runner = runner
        self._launcher = launcher
        self._clock = clock
        self._stopping = stopping
        self._slots = slots
        self._starting = starting
        self._early = early

    async def process(
        self, dispatch: Dispatch, delivery_id: str, answered: Callable[[], None]
    ) -> None:
        """Handles one message. ``answered`` is called once StartAttempt gave its final answer
        (started or refused), after which the message's offset may be committed."""
        # The consumer runs this in the message's trace context: the run's trace goes on here.
        with TRACER.start_as_current_span(
            "consume run",
            kind=SpanKind.CONSUMER,
            attributes={RUN_ID: dispatch.run_id, "duetime.delivery_id": delivery_id},
        ):
            not_before, least = dispatch.not_before, 0.0
            early_retries = DoublingBackoff(FIRST_EARLY_RETRY, MAX_EARLY_RETRY)
            permit_retries = DoublingBackoff(FIRST_PERMIT_RETRY, MAX_PERMIT_RETRY)
            early = self._early.limit > 0 and not dispatch.container and not dispatch.at_its_time
            while True:
                # Held until its time (by the server's clock, as estimated) without a slot, or
                # until a little before it to start its attempt ahead.
                ahead_by = EARLY_AHEAD if early else 0.0
                wait = max(self._clock.seconds_until_ns(not_before) - ahead_by, least)
                if not await self._hold(min(wait, MAX_EARLY_WAIT)):
                    return  # stopping: unanswered, so the message goes to another worker
                before = self._clock.seconds_until_ns(not_before) > 0
                ahead = early and before and self._early.try_reserve(dispatch.flow)
                if early and before and not ahead:
                    # Every early permit taken: nothing asked now (a start would be refused
                    # TOO_EARLY, a round trip in the way of the runs whose time has come); a
                    # permit is tried for again a little later, until the run's time.
                    until = self._clock.seconds_until_ns(not_before)
                    least = min(permit_retries.next(), until)
                    continue
                try:
                    if ahead:
                        await self._run_ahead(dispatch, delivery_id, answered)
                    else:
                        await self._run_when_due(dispatch, delivery_id, answered)
                    return
                except TooEarly as answer:  # wait again, holding nothing
                    not_before, least = answer.again, early_retries.next()
                    early = early and not ahead  # not started ahead: this run starts at its time
                except (Unanswered, SlotsClosed):
                    return  # stopping: unanswered, as when held

    async def _hold(self, seconds: float) -> bool:
        """Waits ``seconds``, unless stopping or stopped meanwhile; False when stopping."""
        if seconds > 0 and not self._stopping.is_set():
            try:
                async with asyncio.timeout(seconds):
                    await self._stopping.wait()
            except TimeoutError:
                pass
        return not self._stopping.is_set()

    async def _run_when_due(
        self, dispatch: Dispatch, delivery_id: str, answered: Callable[[], None]
    ) -> None:
        """Starts and runs the attempt once an execution slot is free. A container target's
        launcher permit is waited for first: waiting after the start would count against the
        attempt's timeout and lease (a burst of long processes had the last ones time out
        without running). A message that does not say its target is a container (an HTTP
        target, an older writer) waits for none."""
        reservation: Reservation | None = None
        if dispatch.container:
            reservation = await self._reserve(dispatch.flow)
        try:
            with await self._slots.reserved(dispatch.flow) as slot:
                await self._start_and_run(dispatch, delivery_id, answered, slot, reservation)
        finally:
            if reservation is not None:
                reservation.release()

    async def _run_ahead(
        self, dispatch: Dispatch, delivery_id: str, answered: Callable[[], None]
    ) -> None:
        """Starts the attempt ahead of its run's time under the early permit taken for it, and
        runs it at that time."""
        with Reservation(self._early, dispatch.flow) as permit:
            ahead_of = dispatch.not_before
            await self._start_and_run(dispatch, delivery_id, answered, permit, None, ahead_of)

    async def _start_and_run(
        self,
        dispatch: Dispatch,
        delivery_id: str,
        answered: Callable[[], None],
        place: Reservation,
        reservation: Reservation | None = None,
        ahead_of: int | None = None,
    ) -> None:
        """A message's one path, holding ``place`` until its call ends: its attempt asked for
        under a start permit, the message answered, the attempt run (or handed back unrun when
        stopping). TooEarly and Unanswered go to the caller, the message unanswered."""
        try:
            with await self._start_permit(dispatch.flow, ahead_of):
                started = await self._start_seen_through(dispatch, delivery_id, ahead_of)
        except StartRefused:
            answered()
            return
        answered()
        if self._stopping.is_set():
            await self._runner.hand_back_unrun(started)
            return
        await self._runner.run(started, place.release, reservation, dispatch.flow)

    async def _start_permit(self, flow: Flow, ahead_of: int | None) -> Reservation:
        """A start permit; for a start asked ahead, behind every start whose time has come
        until its own has."""
        if ahead_of is None:
            return await self._starting.reserved(flow)
        due = asyncio.get_running_loop().time() + self._clock.seconds_until_ns(ahead_of)
        return await reserved_ahead(self._starting, flow, due)

    async def _reserve(self, flow: Flow) -> Reservation:
        """The launcher's permit for a container target; Unanswered when stopping meanwhile."""
        reserving = asyncio.ensure_future(self._launcher.reserve(flow))
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
            raise Unanswered
        if self._stopping.is_set():
            reserving.result().release()
            raise Unanswered
        return reserving.result()

    async def _start_seen_through(
        self, dispatch: Dispatch, delivery_id: str, ahead_of: int | None
    ) -> Started:
        """The start, seen through to its answer even when this task is cancelled meanwhile.
        Cancelled while stopping, an attempt it started is handed back before the cancellation
        goes on (the message stays unanswered). Cancelled while not stopping (its partition
        was revoked), an attempt it started is kept and run: aiokafka rebalances eagerly, so
        every member joining or leaving the group revokes every partition, and handing those
        attempts back would spend the run's free hand-backs (a rolling deploy could dead-letter
        a run that never failed). The partition's next owner is refused ALREADY_STARTED for
        the redelivery and commits past it; this worker, given the partition back, replays the
        same attempt and drops it as a duplicate."""
        starting = self._starts.start(
            dispatch.run_id, delivery_id, ahead_of, nominal_time=dispatch.nominal_time
        )
        started, cancelled = await despite_cancellation(starting)
        if cancelled:
            if not self._stopping.is_set():
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()  # the cancellation is answered by keeping the attempt
                return started
            await despite_cancellation(self._runner.hand_back_unrun(started))
            raise asyncio.CancelledError
        return started
