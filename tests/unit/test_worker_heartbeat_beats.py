"""The worker's heartbeat stream: which attempts each beat lists, and when it goes."""

from __future__ import annotations

import asyncio
import gc
import math
from typing import Any, cast

from google.protobuf.timestamp_pb2 import Timestamp

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_core.attempts import MAX_ATTEMPTS_PER_BEAT
from duetime_worker.attempt.heartbeats import Heartbeats
from duetime_worker.attempt.lifecycle import Attempt
from duetime_worker.herd.governor import Herd
from duetime_worker.targets.outcome import Outcome
from testkit.polling import eventually, throughout


class Stream:
    """A Heartbeat call that answers every beat with CONTINUE and a 60 s lease, or with a
    CANCEL for the runs ``cancels`` names, with its reason."""

    def __init__(self, cancels: dict[str, str] | None = None) -> None:
        self.beats: asyncio.Queue[pb.HeartbeatRequest] = asyncio.Queue()
        self._answers: asyncio.Queue[pb.HeartbeatResponse] = asyncio.Queue()
        self._cancels = cancels or {}

    async def write(self, request: pb.HeartbeatRequest) -> None:
        await self.beats.put(request)
        now = Timestamp(seconds=1_000)
        answer = pb.HeartbeatResponse(server_time=now)
        for ref in request.attempts:
            reason = self._cancels.get(ref.run_id)
            if reason is not None:
                answer.directives.add(attempt=ref, directive=pb.DIRECTIVE_CANCEL, reason=reason)
                continue
            answer.directives.add(
                attempt=ref,
                directive=pb.DIRECTIVE_CONTINUE,
                lease_expire_time=Timestamp(seconds=1_060),
            )
        await self._answers.put(answer)

    async def read(self) -> pb.HeartbeatResponse:
        return await self._answers.get()

    def cancel(self) -> None:
        pass


class Stub:
    def __init__(self, stream: Stream) -> None:
        self._stream = stream

    def Heartbeat(self, metadata: object) -> Stream:  # noqa: N802 (the gRPC method's name)
        return self._stream


def attempt_of(
    run_id: str, task: asyncio.Task[Outcome], lease_deadline: float, *, ahead: bool = False
) -> Attempt:
    """An attempt whose call runs as ``task``."""
    attempt = Attempt(run_id, 1, lease_deadline, ahead=ahead)
    attempt.run(task)
    return attempt


def listed(beat: pb.HeartbeatRequest) -> list[str]:
    return sorted(ref.run_id for ref in beat.attempts)


async def test_a_call_about_to_begin_gets_a_beat_of_its_own_and_full_beats_keep_their_pace() -> (
    None
):
    stream = Stream()
    beats = Heartbeats(cast(Any, Stub(stream)), "w-1", (), interval=0.6, herd=Herd())
    held = cast("asyncio.Task[Outcome]", asyncio.create_task(asyncio.sleep(math.inf)))
    attempts = [attempt_of(f"run-{i}", held, 0.0) for i in range(3)]
    for attempt in attempts:
        beats.add(attempt)
    stopping = asyncio.Event()
    running = asyncio.create_task(beats.run(stopping))
    try:
        async with asyncio.timeout(5):
            # A new stream beats at once, for every attempt, naming this process.
            first = await stream.beats.get()
            assert listed(first) == ["run-0", "run-1", "run-2"]
            assert first.incarnation == beats.incarnation != ""
            # A call about to begin: a beat within the urgent spacing, listing only its attempt;
            # ``fresh`` returns once that beat is answered, its lease renewed.
            loop = asyncio.get_running_loop()
            asked = loop.time()
            await beats.fresh(("run-1", 1))
            assert loop.time() - asked < 0.5
            urgent = stream.beats.get_nowait()
            assert (listed(urgent), urgent.incarnation) == (["run-1"], beats.incarnation)
            assert attempts[1].lease_deadline > loop.time() + 50
            # The full beats go on an interval after the last full one, whatever came between.
            full = await stream.beats.get()
            assert listed(full) == ["run-0", "run-1", "run-2"]
            assert loop.time() - asked >= 0.5
    finally:
        stopping.set()
        await running
        held.cancel()


async def test_a_pause_cancels_an_early_attempt_until_its_call_begins_and_a_delete_always() -> None:
    # The scheduler says JOB_PAUSED only for a call it sees not begun; an answer that reaches
    # the worker after the call began is stale, and cancelling then would leave a call that
    # reached the target recorded as cancelled (the chaos soak's "applied ... run SKIPPED").
    stream = Stream({"waiting": "JOB_PAUSED", "calling": "JOB_PAUSED", "deleted": "JOB_DELETED"})
    beats = Heartbeats(cast(Any, Stub(stream)), "w-1", (), interval=60, herd=Herd())
    tasks = {
        name: cast("asyncio.Task[Outcome]", asyncio.create_task(asyncio.sleep(math.inf)))
        for name in ("waiting", "calling", "deleted")
    }
    attempts = {
        name: attempt_of(name, task, math.inf, ahead=name == "waiting")
        for name, task in tasks.items()
    }
    for attempt in attempts.values():
        beats.add(attempt)
    stopping = asyncio.Event()
    running = asyncio.create_task(beats.run(stopping))
    try:
        async with asyncio.timeout(5):
            await beats.fresh(("calling", 1))
            # The one waiting for its call hears of the pause in its beat before the call.
            await beats.fresh(("waiting", 1))
            await asyncio.wait([tasks["waiting"], tasks["deleted"]])
        assert attempts["waiting"].cancel_reason == "JOB_PAUSED"
        assert attempts["deleted"].cancel_reason == "JOB_DELETED"
        assert tasks["waiting"].cancelled()
        assert tasks["deleted"].cancelled()
        assert not tasks["calling"].done()
        assert attempts["calling"].cancel_reason == ""
    finally:
        stopping.set()
        await running
        for task in tasks.values():
            task.cancel()


async def test_full_beats_leave_out_an_attempt_started_ahead_until_its_call_begins() -> None:
    # Its lease counts from its call time, and its own beat before the call renews it (and
    # tells it of a cancel): listing it in every full beat of its wait read it twice a run.
    stream = Stream()
    beats = Heartbeats(cast(Any, Stub(stream)), "w-1", (), interval=0.3, herd=Herd())
    held = cast("asyncio.Task[Outcome]", asyncio.create_task(asyncio.sleep(math.inf)))
    ahead = [attempt_of(f"ahead-{i}", held, 0.0, ahead=True) for i in range(2)]
    for attempt in [attempt_of("calling", held, 0.0), *ahead]:
        beats.add(attempt)
    # A caller asking before the stream opens is listed in its first beat, a full one.
    asked = asyncio.create_task(beats.fresh(("ahead-0", 1)))
    stopping = asyncio.Event()
    running = asyncio.create_task(beats.run(stopping))
    try:
        async with asyncio.timeout(5):
            assert listed(await stream.beats.get()) == ["ahead-0", "calling"]
            await asked
            assert listed(await stream.beats.get()) == ["calling"]  # the next full beat
            await beats.fresh(("ahead-1", 1))
            assert listed(stream.beats.get_nowait()) == ["ahead-1"]
            ahead[1].call_begins(0)
            assert listed(await stream.beats.get()) == ["ahead-1", "calling"]
    finally:
        stopping.set()
        await running
        held.cancel()


class HeldStream(Stream):
    """A Stream whose answers wait until ``release`` lets the next one go: a slow scheduler."""

    def __init__(self) -> None:
        super().__init__()
        self._held: asyncio.Queue[pb.HeartbeatResponse] = asyncio.Queue()
        self._gate: asyncio.Queue[None] = asyncio.Queue()

    async def write(self, request: pb.HeartbeatRequest) -> None:
        await super().write(request)
        self._held.put_nowait(self._answers.get_nowait())

    async def read(self) -> pb.HeartbeatResponse:
        await self._gate.get()
        return self._held.get_nowait()

    def release(self) -> None:
        self._gate.put_nowait(None)


async def test_callers_behind_a_beat_in_flight_get_a_beat_listing_only_them() -> None:
    # A herd's early attempts ask for their pre-call beat over some tens of milliseconds, and
    # the scheduler takes a while to answer a beat listing thousands. The callers who came
    # after a beat went out get the next beat, which must list only them: listing the first
    # beat's callers again made each beat as long as the herd, and the answers piled up
    # seconds past the herd's instant.
    stream = HeldStream()
    beats = Heartbeats(cast(Any, Stub(stream)), "w-1", (), interval=60, herd=Herd())
    held = cast("asyncio.Task[Outcome]", asyncio.create_task(asyncio.sleep(math.inf)))
    for i in range(6):
        beats.add(attempt_of(f"run-{i}", held, 0.0))
    stopping = asyncio.Event()
    running = asyncio.create_task(beats.run(stopping))
    try:
        async with asyncio.timeout(5):
            assert len(listed(await stream.beats.get())) == 6  # a new stream's full beat
            stream.release()
            first = [asyncio.create_task(beats.fresh((f"run-{i}", 1))) for i in range(3)]
            assert listed(await stream.beats.get()) == ["run-0", "run-1", "run-2"]
            later = [asyncio.create_task(beats.fresh((f"run-{i}", 1))) for i in range(3, 6)]
            assert listed(await stream.beats.get()) == ["run-3", "run-4", "run-5"]
            stream.release()  # the first of the two answers: only its callers return
            await asyncio.wait(first)
            await asyncio.sleep(0)
            assert not any(task.done() for task in later)
            stream.release()
            await asyncio.wait(later)
        assert stream.beats.empty()
    finally:
        stopping.set()
        await running
        held.cancel()


class Reopened:
    """A stub whose every Heartbeat call is a new HeldStream: a broken stream's answers are
    gone with it."""

    def __init__(self) -> None:
        self.streams: list[HeldStream] = []
        self.opened = asyncio.Event()

    def Heartbeat(self, metadata: object) -> HeldStream:  # noqa: N802 (the gRPC method's name)
        self.streams.append(HeldStream())
        self.opened.set()
        return self.streams[-1]


async def test_a_caller_listed_in_a_beat_a_broken_stream_lost_is_listed_again() -> None:
    stub = Reopened()
    beats = Heartbeats(cast(Any, stub), "w-1", (), interval=60, herd=Herd(), answer_timeout=0.3)
    held = cast("asyncio.Task[Outcome]", asyncio.create_task(asyncio.sleep(math.inf)))
    beats.add(attempt_of("run-0", held, 0.0))
    beats.add(attempt_of("run-1", held, 0.0))
    stopping = asyncio.Event()
    running = asyncio.create_task(beats.run(stopping))
    try:
        async with asyncio.timeout(5):
            await stub.opened.wait()
            stub.opened.clear()
            lost = stub.streams[0]
            await lost.beats.get()
            lost.release()
            caller = asyncio.create_task(beats.fresh(("run-1", 1)))
            assert listed(await lost.beats.get()) == ["run-1"]
            # Never answered: the stream breaks, and the new one's first beat lists it again.
            await stub.opened.wait()
            assert listed(await stub.streams[1].beats.get()) == ["run-0", "run-1"]
            assert not caller.done()
            stub.streams[1].release()
            await caller
    finally:
        stopping.set()
        await running
        held.cancel()


async def test_a_full_beat_waits_while_the_worker_is_busy_and_the_leases_allow() -> None:
    stream = Stream()
    herd = Herd(full_beat_hold=1.5)
    beats = Heartbeats(cast(Any, Stub(stream)), "w-1", (), interval=0.6, herd=herd)
    held = cast("asyncio.Task[Outcome]", asyncio.create_task(asyncio.sleep(math.inf)))
    beats.add(attempt_of("long", held, math.inf))
    stopping = asyncio.Event()
    running = asyncio.create_task(beats.run(stopping))
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(5):
            assert listed(await stream.beats.get()) == ["long"]  # a new stream's, at once
            first = loop.time()
            herd.report_begins()  # busy: a herd's reports are being sent
            # The next full beat (0.6 s after the first) waits while the worker is busy...
            await throughout(stream.beats.empty, 0.9, "no full beat while busy")
            # ...and goes once it is not.
            herd.report_ends()
            assert listed(await stream.beats.get()) == ["long"]
            assert loop.time() - first < 1.5
            # Held for full_beat_hold at most (0.6 s + 1.5 s after the last one).
            last = loop.time()
            herd.call_due()  # busy: a herd's call waits to go out
            assert listed(await stream.beats.get()) == ["long"]
            assert 2.0 <= loop.time() - last < 2.6
            # A lease that would run out within two intervals is renewed on time.
            beats.add(attempt_of("short", held, loop.time() + 1.4))
            added = loop.time()
            assert listed(await stream.beats.get()) == ["long", "short"]
            assert loop.time() - added < 0.5
    finally:
        herd.stop()  # the collector, paused for the call due, runs again
        stopping.set()
        await running
        held.cancel()


class BrokenStream:
    """A stream whose server went away: a write fails, and a read that is cancelled fails
    with an error of its own (as grpc's can) rather than CancelledError."""

    async def write(self, request: pb.HeartbeatRequest) -> None:
        await asyncio.sleep(0.01)
        raise ConnectionError("write on a broken stream")

    async def read(self) -> pb.HeartbeatResponse:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise ConnectionError("read on a cancelled stream") from None
        raise AssertionError("unreachable")

    def cancel(self) -> None:
        pass


class BrokenStub:
    def __init__(self) -> None:
        self.streams = 0

    def Heartbeat(self, metadata: object) -> BrokenStream:  # noqa: N802 (the gRPC method's name)
        self.streams += 1
        return BrokenStream()


async def test_a_broken_streams_reader_error_is_collected_not_left_to_the_loop() -> None:
    # Both halves of the stream fail (a scheduler or its database restarting): the reader's
    # error must be collected with the stream, never reported as "Task exception was never
    # retrieved" when its task is garbage-collected.
    loop = asyncio.get_running_loop()
    unretrieved: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _, context: unretrieved.append(context))
    try:
        stub = BrokenStub()
        beats = Heartbeats(cast(Any, stub), "w-1", (), interval=0.05, herd=Herd(), max_backoff=0.1)
        held = cast("asyncio.Task[Outcome]", asyncio.create_task(asyncio.sleep(math.inf)))
        beats.add(attempt_of("run-0", held, math.inf))
        stopping = asyncio.Event()
        running = asyncio.create_task(beats.run(stopping))

        async def reconnected_twice() -> bool:
            return stub.streams >= 3

        await eventually(reconnected_twice, 5, "two reconnections after breaks")
        stopping.set()
        await running
        held.cancel()
        gc.collect()
        assert [c["message"] for c in unretrieved] == []
    finally:
        loop.set_exception_handler(previous)


async def test_more_attempts_than_a_beat_may_list_go_in_parts_and_a_caller_waits_for_all() -> None:
    stream = Stream()
    beats = Heartbeats(cast(Any, Stub(stream)), "w-1", (), interval=60, herd=Herd())
    held = cast("asyncio.Task[Outcome]", asyncio.create_task(asyncio.sleep(math.inf)))
    count = 2 * MAX_ATTEMPTS_PER_BEAT + 5
    attempts = [attempt_of(f"run-{i}", held, 0.0) for i in range(count)]
    for attempt in attempts:
        beats.add(attempt)
    stopping = asyncio.Event()
    running = asyncio.create_task(beats.run(stopping))
    try:
        async with asyncio.timeout(10):
            # A call about to begin for the last attempt: its caller returns once every part
            # of the beat listing it was answered.
            await beats.fresh((f"run-{count - 1}", 1))
            sizes = [len(stream.beats.get_nowait().attempts) for _ in range(3)]
            assert sizes == [MAX_ATTEMPTS_PER_BEAT, MAX_ATTEMPTS_PER_BEAT, 5]
            loop = asyncio.get_running_loop()
            assert all(a.lease_deadline > loop.time() + 50 for a in attempts)
    finally:
        stopping.set()
        await running
        held.cancel()
