"""One bidirectional Heartbeat stream per worker, for the worker's life.

Every interval (and half an interval after an attempt whose call began is added) it sends all
the worker's active attempts whose call began (one started ahead of its time needs no beat
before its call's own), which renews their leases; a CANCEL directive cancels that attempt's
task. A call about to begin asks for a beat of its own (``fresh``), which lists only the
attempts of callers no beat listed yet, so that a call beside thousands of held attempts does
not wait for a beat that lists them all, nor a herd's later callers for beats that list its
earlier ones again; when each beat goes is the ``beat_schedule``, and whether a herd holds the
full ones back the ``herd``'s. A broken stream, or one whose beat goes unanswered for
``ANSWER_TIMEOUT`` (a frozen scheduler), is opened again with backoff, on the channel's next
reachable scheduler; the attempts stay registered meanwhile.

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
import uuid
from collections.abc import Sequence
from typing import Any

from grpc import aio

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_core.attempts import MAX_ATTEMPTS_PER_BEAT
from duetime_core.backoff import DoublingBackoff
from duetime_worker.attempt.beat_schedule import BeatSchedule
from duetime_worker.attempt.fresh_beats import FreshCallers
from duetime_worker.attempt.lease import lease_length
from duetime_worker.attempt.lifecycle import Attempt, Key
from duetime_worker.attempt.wire import beat_request
from duetime_worker.herd.governor import Herd

log = logging.getLogger(__name__)

# A beat not answered within this long breaks the stream (see ``_check_answered``).
ANSWER_TIMEOUT = 10.0
# A broken stream is opened again after this long, doubling up to ``max_backoff`` while the
# streams keep breaking before a beat is sent (exact delays, no jitter).
FIRST_RECONNECT = 0.1


class Heartbeats:
    def __init__(
        self,
        stub: worker_service_pb2_grpc.WorkerServiceAsyncStub,
        worker_id: str,
        metadata: Sequence[tuple[str, str]],
        interval: float,
        *,
        herd: Herd,
        max_backoff: float = 5.0,
        answer_timeout: float = ANSWER_TIMEOUT,
    ) -> None:
        self._stub = stub
        self._worker_id = worker_id
        # This process's own, named in its starts' delivery ids and in every beat: its beats
        # hold the attempts it started ahead (not a predecessor's under the same worker id).
        self.incarnation = uuid.uuid4().hex[:12]
        self._metadata = tuple(metadata)
        self._max_backoff = max_backoff
        self._answer_timeout = answer_timeout
        # The shortest lease a beat's answer granted so far (seconds).
        self._lease_seen = math.inf
        self._active: dict[Key, Attempt] = {}
        self._schedule = BeatSchedule(interval, self._active, herd)
        # Send times of the beats on the current stream still waiting for their answer: the
        # server answers each beat once, in order.
        self._unanswered: collections.deque[tuple[float, int]] = collections.deque()
        # Set whenever the next beat's time may have moved (an attempt added, a ``fresh``).
        self._wake = asyncio.Event()
        self._fresh = FreshCallers()
        self.beats = 0
        self.streams_opened = 0

    @property
    def active(self) -> list[Attempt]:
        return list(self._active.values())

    def add(self, attempt: Attempt) -> None:
        self._active[attempt.key] = attempt
        if attempt.began:  # one started ahead is beaten first before its call (``fresh``)
            self._schedule.attempt_added()
            self._wake.set()

    async def fresh(self, key: Key) -> None:
        """Returns once a beat listing ``key``, sent after this call, was answered: the
        directive it carried (a cancel for an attempt whose job was paused or deleted) is
        applied by then. Callers at about the same time share one beat."""
        waiter = self._fresh.ask(key)
        self._wake.set()
        await asyncio.shield(waiter)

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

    def remove(self, attempt: Attempt) -> None:
        if self._active.get(attempt.key) is attempt:
            del self._active[attempt.key]

    def hand_back_all(self, reason: str) -> None:
        for attempt in list(self._active.values()):
            attempt.hand_back(reason)

    def _request(self, full: bool) -> pb.HeartbeatRequest:
        """A beat lists the attempts its new ``fresh`` callers name and, when full, every
        active attempt whose call began. An attempt started ahead of its time is left out of
        full beats until then: its lease counts from its call time, and its own beat before
        the call (``fresh``) renews it and tells it of a cancel."""
        listed = {
            k: a for k in self._fresh.unlisted_keys() if (a := self._active.get(k)) is not None
        }
        if full:
            listed.update((k, a) for k, a in self._active.items() if a.began)
        return beat_request(self._worker_id, self.incarnation, listed.values())

    async def _send(self, call: Any, now: float, full: bool) -> None:
        request = self._request(full)
        if not request.attempts:
            self._fresh.answer_unlisted()  # nothing to beat for: nothing to hear
            return
        self._schedule.sent(now)
        # More attempts than a message may list go in parts, each a beat of its own, answered
        # in order; the callers wait for the last part's answer.
        refs = list(request.attempts)
        parts = [
            refs[i : i + MAX_ATTEMPTS_PER_BEAT] for i in range(0, len(refs), MAX_ATTEMPTS_PER_BEAT)
        ]
        self._fresh.listed(self.beats + len(parts) - 1)
        # Numbered and built at once: an announcement made while it is being written counts
        # from the next beat, which carries it.
        for _ in parts:
            self._unanswered.append((now, self.beats))
            self.beats += 1
        for part in parts:
            await call.write(
                request
                if len(parts) == 1
                else pb.HeartbeatRequest(
                    worker_id=request.worker_id, incarnation=self.incarnation, attempts=part
                )
            )

    def _apply(self, response: pb.HeartbeatResponse) -> None:
        sent_at, number = self._unanswered.popleft() if self._unanswered else (-math.inf, -1)
        # A beat in a herd renews thousands of attempts, nearly all to the same expiry: each
        # distinct expiry's lease length is worked out once per answer.
        lengths: dict[tuple[int, int], float] = {}
        server_time = response.server_time.ToNanoseconds()
        for directive in response.directives:
            ref = directive.attempt
            attempt = self._active.get((ref.run_id, ref.attempt))
            if directive.directive == pb.DIRECTIVE_CONTINUE:
                if attempt is not None:
                    expiry = directive.lease_expire_time
                    at = (expiry.seconds, expiry.nanos)
                    length = lengths.get(at)
                    if length is None:
                        length = lengths[at] = lease_length(expiry.ToNanoseconds(), server_time)
                        self._lease_seen = min(self._lease_seen, length)
                    attempt.renewed(sent_at, length)
                    if attempt.announced_from is not None:
                        attempt.beat_answered(number)
                continue
            if directive.directive != pb.DIRECTIVE_CANCEL or attempt is None:
                continue
            if attempt.told_to_cancel(directive.reason):
                log.info(
                    "attempt cancelled by the scheduler",
                    extra={
                        "action": "attempt_cancel_directive",
                        "run_id": ref.run_id,
                        "attempt": ref.attempt,
                        "reason": directive.reason,
                    },
                )
        self._fresh.answered_through(number)

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
        while not stopping.is_set():
            call = self._stub.Heartbeat(metadata=self._metadata)
            self.streams_opened += 1
            self._unanswered.clear()
            self._fresh.relist()
            reader = asyncio.create_task(self._read(call))
            stop_wait = asyncio.create_task(stopping.wait())
            try:
                await self._beat(call, reader, stop_wait, backoff)
                return
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

    async def _beat(
        self,
        call: Any,
        reader: asyncio.Task[None],
        stop_wait: asyncio.Task[Any],
        backoff: DoublingBackoff,
    ) -> None:
        """Beats on ``call`` until ``stop_wait`` is done; raises what breaks the stream."""
        loop = asyncio.get_running_loop()
        self._schedule.new_stream()
        while True:
            send_at, full = self._schedule.next_beat(loop.time(), self._fresh.wanted)
            wait = send_at - loop.time()
            if self._unanswered:  # an answer overdue breaks the stream, below
                wait = min(wait, self._unanswered[0][0] + self._patience - loop.time())
            if wait > 0 and await self._stopped_waiting(wait, reader, stop_wait):
                return
            self._check_answered(loop.time())
            # Asked again: woken, the next beat's time may have moved (or a full beat may be
            # held longer).
            send_at, full = self._schedule.next_beat(loop.time(), self._fresh.wanted)
            if loop.time() < send_at:
                continue
            now = loop.time()
            self._schedule.going(now, full)
            await self._send(call, now, full)
            backoff.reset()

    async def _stopped_waiting(
        self, wait: float, reader: asyncio.Task[None], stop_wait: asyncio.Task[Any]
    ) -> bool:
        """Waits ``wait`` seconds, or until woken, the stream read to its end (its error
        raised) or stopping; True when stopping."""
        self._wake.clear()
        woken = asyncio.create_task(self._wake.wait())
        done, _ = await asyncio.wait(
            {woken, reader, stop_wait}, timeout=wait, return_when=asyncio.FIRST_COMPLETED
        )
        woken.cancel()
        if reader in done:
            reader.result()  # raises why the stream ended
        return stop_wait in done
