"""The worker's heartbeat stream: which attempts each beat lists, and when it goes."""

from __future__ import annotations

import asyncio
import math
from typing import Any, cast

from google.protobuf.timestamp_pb2 import Timestamp

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_worker.heartbeat import ActiveAttempt, Heartbeats
from duetime_worker.outcome import Outcome


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


def listed(beat: pb.HeartbeatRequest) -> list[str]:
    return sorted(ref.run_id for ref in beat.attempts)


async def test_a_call_about_to_begin_gets_a_beat_of_its_own_and_full_beats_keep_their_pace() -> (
    None
):
    stream = Stream()
    beats = Heartbeats(cast(Any, Stub(stream)), "w-1", (), interval=0.6)
    held = cast("asyncio.Task[Outcome]", asyncio.create_task(asyncio.sleep(math.inf)))
    attempts = [ActiveAttempt(f"run-{i}", 1, held, lease_deadline=0.0) for i in range(3)]
    for attempt in attempts:
        beats.add(attempt)
    stopping = asyncio.Event()
    running = asyncio.create_task(beats.run(stopping))
    try:
        async with asyncio.timeout(5):
            # A new stream beats at once, for every attempt.
            assert listed(await stream.beats.get()) == ["run-0", "run-1", "run-2"]
            # A call about to begin: a beat within the urgent spacing, listing only its attempt;
            # ``fresh`` returns once that beat is answered, its lease renewed.
            loop = asyncio.get_running_loop()
            asked = loop.time()
            await beats.fresh(("run-1", 1))
            assert loop.time() - asked < 0.5
            assert listed(stream.beats.get_nowait()) == ["run-1"]
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
    beats = Heartbeats(cast(Any, Stub(stream)), "w-1", (), interval=60)
    tasks = {
        name: cast("asyncio.Task[Outcome]", asyncio.create_task(asyncio.sleep(math.inf)))
        for name in ("waiting", "calling", "deleted")
    }
    attempts = {
        name: ActiveAttempt(name, 1, task, lease_deadline=math.inf, began=name != "waiting")
        for name, task in tasks.items()
    }
    for attempt in attempts.values():
        beats.add(attempt)
    stopping = asyncio.Event()
    running = asyncio.create_task(beats.run(stopping))
    try:
        async with asyncio.timeout(5):
            await beats.fresh(("calling", 1))
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
