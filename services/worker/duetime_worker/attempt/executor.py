"""The worker's attempts, one dispatch message each, from start to report: the ``Executor``
wires the three parts of an attempt's path around the state they share.

- the ``starter`` holds a message until its run's time (or a little before, to start its
  attempt ahead), takes a place for it, and asks the scheduler for its attempt (``starts``);
- the ``runner`` calls its target under the lease (``lease``) the ``heartbeats`` renew;
- the ``reporter`` tells the scheduler how it ended (CompleteAttempt, with the fencing token).

Each attempt is one ``lifecycle.Attempt``; the calls to the scheduler go through
``scheduler_client``, batched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_worker.attempt.heartbeats import Heartbeats
from duetime_worker.attempt.reporter import Reporter
from duetime_worker.attempt.runner import Runner
from duetime_worker.attempt.scheduler_client import RPC_TIMEOUT, AttemptCalls
from duetime_worker.attempt.server_clock import ServerClock
from duetime_worker.attempt.starter import Starter
from duetime_worker.attempt.starts import StartCalls
from duetime_worker.attempt.tally import AttemptTally
from duetime_worker.herd.governor import Herd
from duetime_worker.herd.slots import Permits, WeightedSlots
from duetime_worker.targets.container.launcher import Launcher
from duetime_worker.targets.http.caller import HttpCaller


class Executor:
    """The attempts of one worker process. A message waits for its run's time holding nothing;
    then for an execution slot (``slots``), or, started ahead, for nothing but an early permit
    (``early``, bounded apart from the slots, which go to runs whose time has come); and for a
    start permit (``starting``) while its start is asked for, so the queues behind them (start
    batches, the scheduler) stay short and the fair queue in front of them decides who goes
    first. Per-run starts and successes are counted, not logged (``tally``)."""

    def __init__(
        self,
        stub: worker_service_pb2_grpc.WorkerServiceAsyncStub,
        worker_id: str,
        metadata: Sequence[tuple[str, str]],
        heartbeats: Heartbeats,
        http: HttpCaller,
        launcher: Launcher,
        *,
        herd: Herd,
        calls: AttemptCalls | None = None,
        slots: int = 64,
        starting: int = 256,
        early: int = 0,
    ) -> None:
        calls = calls or AttemptCalls(stub, metadata, RPC_TIMEOUT)
        self._stopping = asyncio.Event()
        self._clock = ServerClock()
        self._herd = herd
        self._slots = WeightedSlots(slots)
        self._starting = WeightedSlots(starting)
        self._early = Permits(early)
        self.tally = AttemptTally()
        self._reporter = Reporter(calls, worker_id, herd, self.tally)
        self._runner = Runner(
            heartbeats,
            http,
            launcher,
            self._reporter,
            clock=self._clock,
            herd=herd,
            stopping=self._stopping,
            tally=self.tally,
        )
        # Handles one message (``Starter.process``).
        self.process = self._starter(calls, worker_id, heartbeats.incarnation, launcher).process

    def _starter(
        self, calls: AttemptCalls, worker_id: str, incarnation: str, launcher: Launcher
    ) -> Starter:
        """What takes a message from its start (as ``incarnation``, this process, asks it) to
        its run."""
        starts = StartCalls(
            calls, worker_id, self._clock, self._starting, self._stopping, self.tally, incarnation
        )
        return Starter(
            starts,
            self._runner,
            launcher,
            clock=self._clock,
            stopping=self._stopping,
            slots=self._slots,
            starting=self._starting,
            early=self._early,
        )

    def stop(self) -> None:
        """Nothing starts from now on (see ``starter``); running attempts go on, for the
        consumer's drain to wait for or hand back."""
        self._stopping.set()
        self._runner.stop()
        self._herd.stop()
        self._slots.close()
        self._starting.close()
