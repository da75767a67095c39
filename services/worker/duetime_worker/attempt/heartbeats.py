"""One bidirectional Heartbeat stream per worker, for the worker's life.

Every interval (and half an interval after an attempt is added) it sends all the worker's active
attempts, which renews their leases; a CANCEL directive cancels that attempt's task. While the
worker is busy with a herd (``hold_full_beats``: calls due to go out, reports to send), a full
beat waits, for ``FULL_BEAT_HOLD`` at most and only while every lease has more than two
intervals left (a beat on time finds that much of the three intervals advised): it would take
CPU from calls already late, and most of the attempts it lists end meanwhile. A call about to
begin asks for a beat of its own (``fresh``): such a beat goes within ``URGENT_SPACING`` and
lists only the attempts of callers no beat listed yet, so that a call beside thousands of held
attempts does not wait for a beat that lists them all, nor a herd's later callers for beats
that list its earlier ones again. A broken stream, or one whose beat
goes unanswered for ``ANSWER_TIMEOUT`` (a frozen scheduler), is opened again with backoff, on
the channel's next reachable scheduler; the attempts stay registered meanwhile.

Each renewal also moves the attempt's local lease deadline, counted from when the renewing beat
was sent (the lease rule is in ``lease``).

An at-most-once attempt's beats also say how far its call got (NOT_BEGUN, then BEGUN), and its
call begins only once a beat announcing BEGUN has been answered with a renewal
(``announce_call``): the scheduler then knows that an attempt whose last word was NOT_BEGUN
never called its target.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from grpc import aio

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_core.attempts import JOB_PAUSED, MAX_ATTEMPTS_PER_BEAT
from duetime_core.backoff import DoublingBackoff
from duetime_worker.attempt.lease import lease_length
from duetime_worker.attempt.lifecycle import Attempt, Key

log = logging.getLogger(__name__)

# The least time between two beats when a call about to begin asks for one (``fresh``): the
# calls of a herd ask over some tens of milliseconds, and share a beat rather than each
# sending one that lists every attempt.
URGENT_SPACING = 0.1
# How long at most a full beat waits while the worker is busy with a herd (see the module).
FULL_BEAT_HOLD = 5.0
# A beat not answered within this long breaks the stream (see ``_check_answered``).
ANSWER_TIMEOUT = 10.0
# A broken stream is opened again after this long, doubling up to ``max_backoff`` while the
# streams keep breaking before a beat is sent (exact delays, no jitter).
FIRST_RECONNECT = 0.1


def _idle() -> bool:
    return False


def _stale_pause(directive: pb.AttemptDirective, attempt: Attempt) -> bool:
    """A pause cancels an attempt started ahead of its time only until its call begins: the
    scheduler decided before the call's time, and a call begun since then runs on (its next
    beat renews it), as any running attempt of a paused job does."""
    return directive.reason == JOB_PAUSED and attempt.began


@dataclass(eq=False)
class _FreshCaller:
    """A caller of ``Heartbeats.fresh``: its attempt, what it waits on, and the number of the
    beat that listed it (None until one did)."""

    key: Key
    waiter: asyncio.Future[None]
    beat: int | None = None


class Heartbeats:
    def __init__(
        self,
        stub: worker_service_pb2_grpc.WorkerServiceAsyncStub,
        worker_id: str,
        metadata: Sequence[tuple[str, str]],
        interval: float,
        *,
        max_backoff: float = 5.0,
        answer_timeout: float = ANSWER_TIMEOUT,
        full_beat_hold: float = FULL_BEAT_HOLD,
    ) -> None:
        self._stub = stub
        self._worker_id = worker_id
        self._metadata = tuple(metadata)
        self._interval = interval
        self._max_backoff = max_backoff
        self._answer_timeout = answer_timeout
        self._busy: Callable[[], bool] = _idle
        self._full_beat_hold = full_beat_hold
        # The shortest lease a beat's answer granted so far (seconds).
        self._lease_seen = math.inf
        self._active: dict[Key, Attempt] = {}
        # Send times of the beats on the current stream still waiting for their answer: the
        # server answers each beat once, in order.
        self._unanswered: collections.deque[tuple[float, int]] = collections.deque()
        # Set whenever the next beat's time may have moved (an attempt added, a ``fresh``).
        self._wake = asyncio.Event()
        # An attempt was added since the last full beat: the next full one comes sooner.
        self._added = False
        # Callers of ``fresh``, each until the answer to the first beat that listed it.
        self._fresh: list[_FreshCaller] = []
        self._last_sent = -math.inf
        self.beats = 0
        self.streams_opened = 0

    @property
    def active(self) -> list[Attempt]:
        return list(self._active.values())

    def hold_full_beats(self, busy: Callable[[], bool]) -> None:
        """Full beats wait while ``busy()`` says so (see the module)."""
        self._busy = busy

    def add(self, attempt: Attempt) -> None:
        self._active[attempt.key] = attempt
        self._added = True
        self._wake.set()

    async def fresh(self, key: Key) -> None:
        """Returns once a beat listing ``key``, sent after this call, was answered: the
        directive it carried (a cancel for an attempt whose job was paused or deleted) is
        applied by then. Callers at about the same time share one beat."""
        caller = _FreshCaller(key, asyncio.get_running_loop().create_future())
        self._fresh.append(caller)
        self._wake.set()
        await asyncio.shield(caller.waiter)

    async def announce_call(self, key: Key) -> bool:
        """Announces that the attempt's call begins, beats at once, and waits until the beat
        saying so has been answered with a renewal; False when the attempt is no longer held.
        Bounded by the attempt's lease: a beat answered with a cancel cancels the caller."""
        attempt = self._active.get(key)
        if attempt is None:
            return False
        attempt.announce(self.beats)
        await self.fresh(key)
        await attempt.acknowledged()
        return True

    def _fresh_wanted(self) -> bool:
        """A caller of ``fresh`` waits for a beat not yet sent."""
        return any(caller.beat is None for caller in self._fresh)

    def _list_fresh(self, number: int) -> list[_FreshCaller]:
        """The callers no beat sent so far listed are listed in beat ``number``: a caller
        waits for one beat, so a herd's later callers do not send its earlier ones again."""
        listed = [caller for caller in self._fresh if caller.beat is None]
        for caller in listed:
            caller.beat = number
        return listed

    def _answered(self, callers: list[_FreshCaller]) -> None:
        """These callers' beat was answered (or had nothing to hear): they return."""
        for caller in callers:
            if not caller.waiter.done():
                caller.waiter.set_result(None)
        # A waiter is shielded from its caller's cancellation: done means answered.
        self._fresh = [caller for caller in self._fresh if not caller.waiter.done()]

    def remove(self, attempt: Attempt) -> None:
        if self._active.get(attempt.key) is attempt:
            del self._active[attempt.key]

    def hand_back_all(self, reason: str) -> None:
        for attempt in list(self._active.values()):
            attempt.hand_back(reason)

    def _request(self, full: bool, callers: list[_FreshCaller]) -> pb.HeartbeatRequest:
        """A full beat lists every active attempt; another, those its new ``fresh`` callers
        name."""
        if full:
            listed = self._active
        else:
            keys = dict.fromkeys(caller.key for caller in callers)
            listed = {k: self._active[k] for k in keys if k in self._active}
        return pb.HeartbeatRequest(
            worker_id=self._worker_id,
            attempts=[
                pb.AttemptRef(run_id=r, attempt=n, call_progress=a.call)
                for (r, n), a in listed.items()
            ],
        )

    def _next_beat(self, last_full: float, now: float) -> tuple[float, bool]:
        """When the next beat goes (loop time) and whether it lists every attempt. A full beat
        comes an interval after the last, or half an interval after it once an attempt was
        added (a herd of starts must not become one beat per start, each listing every
        attempt), later while the worker is busy (``_held``). A caller of ``fresh``
        gets a beat of its own sooner, ``URGENT_SPACING`` after the last beat."""
        full_at = last_full + (self._interval / 2 if self._added else self._interval)
        if full_at <= now and self._held(full_at, now):
            full_at = now + URGENT_SPACING  # asked again then
        if self._fresh_wanted():
            urgent_at = self._last_sent + URGENT_SPACING
            if urgent_at < full_at:
                return urgent_at, False
        return full_at, True

    def _held(self, due: float, now: float) -> bool:
        """Whether a full beat due at ``due`` waits for the worker to be less busy: for
        ``full_beat_hold`` at most, and only while every lease has more than two intervals
        left."""
        if not self._busy():
            return False
        if now - due >= self._full_beat_hold:
            return False
        soonest = min((a.lease_deadline for a in self._active.values()), default=math.inf)
        return soonest - now > 2 * self._interval

    async def _send(self, call: Any, now: float, full: bool) -> None:
        callers = self._list_fresh(self.beats)
        request = self._request(full, callers)
        if not request.attempts:
            self._answered(callers)  # nothing to beat for: nothing to hear
            return
        self._last_sent = now
        # More attempts than a message may list go in parts, each a beat of its own, answered
        # in order; the callers wait for the last part's answer.
        refs = list(request.attempts)
        parts = [
            refs[i : i + MAX_ATTEMPTS_PER_BEAT] for i in range(0, len(refs), MAX_ATTEMPTS_PER_BEAT)
        ]
        for caller in callers:
            caller.beat = self.beats + len(parts) - 1
        # Numbered and built at once: an announcement made while it is being written counts
        # from the next beat, which carries it.
        for _ in parts:
            self._unanswered.append((now, self.beats))
            self.beats += 1
        for part in parts:
            await call.write(
                request
                if len(parts) == 1
                else pb.HeartbeatRequest(worker_id=request.worker_id, attempts=part)
            )

    def _apply(self, response: pb.HeartbeatResponse) -> None:
        sent_at, number = self._unanswered.popleft() if self._unanswered else (-math.inf, -1)
        # A beat in a herd renews thousands of attempts, nearly all to the same expiry: each
        # distinct expiry's lease length is worked out once per answer.
        lengths: dict[tuple[int, int], float] = {}
        for directive in response.directives:
            ref = directive.attempt
            attempt = self._active.get((ref.run_id, ref.attempt))
            if directive.directive == pb.DIRECTIVE_CONTINUE:
                if attempt is not None:
                    expiry = directive.lease_expire_time
                    at = (expiry.seconds, expiry.nanos)
                    length = lengths.get(at)
                    if length is None:
                        length = lengths[at] = lease_length(expiry, response.server_time)
                        self._lease_seen = min(self._lease_seen, length)
                    attempt.renewed(sent_at, length)
                    if attempt.announced_from is not None:
                        attempt.beat_answered(number)
                continue
            key = (ref.run_id, ref.attempt)
            if directive.directive != pb.DIRECTIVE_CANCEL:
                continue
            if attempt is not None and not _stale_pause(directive, attempt):
                log.info(
                    "attempt cancelled by the scheduler",
                    extra={
                        "action": "attempt_cancel_directive",
                        "run_id": key[0],
                        "attempt": key[1],
                        "reason": directive.reason,
                    },
                )
                attempt.cancel(directive.reason or "cancelled by the scheduler")
        self._answered([c for c in self._fresh if c.beat is not None and c.beat <= number])

    @property
    def _patience(self) -> float:
        """How long a beat may go unanswered: well within the shortest lease granted."""
        return min(self._answer_timeout, self._lease_seen / 3)

    def _check_answered(self, now: float) -> None:
        """A scheduler that stopped answering (frozen, or stuck) is left for another: the
        stream is broken, and opened again on the channel's next reachable scheduler."""
        if self._unanswered and now - self._unanswered[0][0] > self._patience:
            raise ConnectionError(f"no answer to a beat within {self._patience:g} s")

    async def _read(self, call: Any) -> None:
        while True:
            response = await call.read()
            if response is aio.EOF:
                raise ConnectionError("the scheduler ended the heartbeat stream")
            self._apply(response)

    async def run(self, stopping: asyncio.Event) -> None:
        """Keeps the stream up until ``stopping`` is set."""
        backoff = DoublingBackoff(FIRST_RECONNECT, self._max_backoff)
        pause = FIRST_RECONNECT
        loop = asyncio.get_running_loop()
        while not stopping.is_set():
            call = self._stub.Heartbeat(metadata=self._metadata)
            self.streams_opened += 1
            self._unanswered.clear()
            for caller in self._fresh:  # listed in beats the broken stream will not answer
                caller.beat = None
            reader = asyncio.create_task(self._read(call))
            stop_wait = asyncio.create_task(stopping.wait())
            try:
                last_full = -math.inf  # a full beat at once on a new stream
                while True:
                    send_at, full = self._next_beat(last_full, loop.time())
                    wait = send_at - loop.time()
                    if self._unanswered:  # an answer overdue breaks the stream, below
                        wait = min(wait, self._unanswered[0][0] + self._patience - loop.time())
                    if wait > 0:
                        self._wake.clear()
                        woken = asyncio.create_task(self._wake.wait())
                        done, _ = await asyncio.wait(
                            {woken, reader, stop_wait},
                            timeout=wait,
                            return_when=asyncio.FIRST_COMPLETED,
                        )
                        woken.cancel()
                        if reader in done:
                            reader.result()  # raises why the stream ended
                        if stop_wait in done:
                            return
                    self._check_answered(loop.time())
                    # Asked again: woken, the next beat's time may have moved (or a full beat
                    # may be held longer).
                    send_at, full = self._next_beat(last_full, loop.time())
                    if loop.time() < send_at:
                        continue
                    now = loop.time()
                    if full:
                        last_full, self._added = now, False
                    await self._send(call, now, full)
                    backoff.reset()
            except Exception as error:  # any break of the stream: open a new one
                pause = backoff.next()
                detail = (
                    error.code().name
                    if isinstance(error, aio.AioRpcError)
                    else f"{type(error).__name__}: {error}"
                )
                log.warning(
                    "heartbeat stream broken; reconnecting",
                    extra={"action": "heartbeat_reconnect", "error": detail, "backoff": pause},
                )
            finally:
                stop_wait.cancel()
                reader.cancel()
                call.cancel()
                await asyncio.wait([reader])
                # Taken up here: a read that ends in an error of its own (grpc's, as the stream
                # breaks) would otherwise be reported when its task is collected.
                if not reader.cancelled():
                    reader.exception()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), pause)
