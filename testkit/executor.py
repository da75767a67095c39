"""A worker's execution machinery in the test process — heartbeats beating, the allow-listed
HTTP client — against a real WorkerService, for tests that drive the Executor directly."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

from duetime_worker.attempt.executor import Executor
from duetime_worker.attempt.heartbeats import Heartbeats
from duetime_worker.herd.governor import Herd
from duetime_worker.targets.container.launcher import Launcher
from duetime_worker.targets.http.allow_list import TargetPolicy
from duetime_worker.targets.http.caller import HttpCaller
from duetime_worker.targets.http.signer import CallSigner
from testkit.worker_api import WorkerClient

WORKER = "w-test"


@dataclass
class Machinery:
    w: WorkerClient
    metadata: tuple[tuple[str, str], ...]
    heartbeats: Heartbeats
    http: HttpCaller
    herd: Herd  # the heartbeats' and every executor's, as in a worker

    def executor(self, launcher: Launcher, worker: str = WORKER, **options: Any) -> Executor:
        return Executor(
            self.w.stub,
            worker,
            self.metadata,
            self.heartbeats,
            self.http,
            launcher,
            herd=self.herd,
            **options,
        )


@asynccontextmanager
async def worker_machinery(
    w: WorkerClient, worker: str = WORKER, signer: CallSigner | None = None
) -> AsyncIterator[Machinery]:
    """Heartbeats every 0.3 s for ``worker`` and an HTTP client allowing 127.0.0.1, signing
    calls with ``signer``."""
    metadata = (("authorization", f"Bearer {w.token}"),)
    herd = Herd()
    heartbeats = Heartbeats(w.stub, worker, metadata, interval=0.3, herd=herd)
    # Its tests' leases are short (2 s): a loopback connect needs far less than the default.
    http = HttpCaller(TargetPolicy.parse(["127.0.0.1"]), connect_timeout=0.5, signer=signer)
    await http.start()
    stopping = asyncio.Event()
    beating = asyncio.create_task(heartbeats.run(stopping))
    try:
        yield Machinery(w, metadata, heartbeats, http, herd)
    finally:
        stopping.set()
        await beating
        await http.close()


def offline_executor(calls: object, **options: Any) -> Executor:
    """An Executor whose scheduler is ``calls`` (``AttemptCalls``' shape: ``start``,
    ``complete``), with nothing else to reach: for unit tests of its own logic."""
    stub = cast(Any, None)
    herd = Herd()
    return Executor(
        stub,
        "w-1",
        (),
        Heartbeats(stub, "w-1", (), interval=1, herd=herd),
        HttpCaller(TargetPolicy.parse([])),
        cast(Any, None),
        herd=herd,
        calls=cast(Any, calls),
        **options,
    )
