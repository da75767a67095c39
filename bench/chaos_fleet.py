"""A whole Duetime deployment that faults may be injected into: PostgreSQL, etcd and Kafka of its
own (on free ports, so restarting them disturbs nobody), the api, the relay, two schedulers on
fixed ports and two workers given both schedulers' addresses; every service a ``Slot`` that can
be killed, frozen, thawed and started again as a supervisor would."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

from bench.harness import TOPIC_PARTITIONS
from duetime_infra.admin import create_team, create_worker_token
from duetime_infra.kafka.topics import DEAD_LETTER_TOPIC, DISPATCH_TOPICS
from testkit.etcd import PrivateEtcd, private_etcd
from testkit.fleet import new_prefix, scheduler_env
from testkit.kafka import PrivateKafka, create_topics, free_port, private_kafka
from testkit.postgres import PrivatePostgres, private_postgres
from testkit.processes import Service, service, together
from testkit.system import Api, notify_group
from testkit.tls import also_plaintext, service_client_tls

TEAM = "team-chaos"
SCHEDULERS = ("s1", "s2")
WORKERS = ("w1", "w2")
# The attempt lease and the workers' heartbeat: short, so a freeze past the lease stays short.
ATTEMPT_LEASE = 10.0
HEARTBEAT = 2.0
PARTITION_TTL = 10.0
# How a service logs a handler's unexpected exception (answered INTERNAL).
RPC_FAILED = '"action": "rpc_failed"'


@dataclass
class Slot:
    """One service's place in the fleet: its current process (if any), every incarnation's
    output, and the signals a fault sends it."""

    name: str
    module: str
    env: dict[str, str]
    marker: str
    frozen: bool = False
    outputs: list[list[str]] = field(default_factory=list)
    _current: Service | None = None
    _stack: AsyncExitStack | None = None

    @property
    def running(self) -> bool:
        return self._current is not None and self._current.process.returncode is None

    @property
    def pid(self) -> int:
        assert self._current is not None
        return self._current.process.pid

    async def start(self) -> None:
        assert not self.running
        stack = AsyncExitStack()
        self._current = await stack.enter_async_context(
            service(self.module, self.env, self.marker, start_timeout=60)
        )
        self._stack = stack
        self.outputs.append(self._current.output)

    async def kill(self) -> None:
        """kill -9, and the process reaped."""
        assert self._current is not None
        assert self._stack is not None
        self._current.process.kill()
        await self._current.process.wait()
        await self._close()
        self._current, self._stack, self.frozen = None, None, False

    async def kill_leftover(self) -> None:
        """Forgets a process that exited by itself (or never started)."""
        if self._current is not None and self._current.process.returncode is None:
            self._current.process.kill()
        await self._close()
        self._current, self._stack, self.frozen = None, None, False

    def freeze(self) -> None:
        self._current_process().send_signal(signal.SIGSTOP)
        self.frozen = True

    def thaw(self) -> None:
        self._current_process().send_signal(signal.SIGCONT)
        self.frozen = False

    def _current_process(self) -> asyncio.subprocess.Process:
        assert self._current is not None
        return self._current.process

    async def stop(self) -> None:
        """SIGTERM (thawed first), as at the end of the soak."""
        if self.frozen:
            self.thaw()
        await self._close()
        self._current, self._stack = None, None

    async def _close(self) -> None:
        """Ends the incarnation. ``service`` then fails on a handler's unexpected exception;
        the soak counts those itself, over every incarnation (``handler_failures``)."""
        if self._stack is not None:
            with contextlib.suppress(AssertionError):
                await self._stack.aclose()

    def handler_failures(self) -> list[str]:
        """Every incarnation's log lines of a handler that failed unexpectedly (INTERNAL)."""
        return [line for lines in self.outputs for line in lines if RPC_FAILED in line]


@dataclass
class Fleet:
    directory: Path
    postgres: PrivatePostgres
    etcd: PrivateEtcd
    kafka: PrivateKafka
    prefix: str
    services: dict[str, Slot]
    api: Api

    @property
    def dsn(self) -> str:
        return self.postgres.dsn

    async def connect(self, within: float = 60) -> asyncpg.Connection[asyncpg.Record]:
        """A connection of the bench's own, waiting out a restart of the server."""
        deadline = time.monotonic() + within
        while True:
            try:
                return await asyncpg.connect(self.dsn, ssl=False)
            except (OSError, asyncpg.PostgresError):
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)


def _service_env(fleet_env: dict[str, str], mtls: bool, worker_token: str) -> dict[str, Slot]:
    """The six services' slots, configured as deployed but with short leases."""
    dsn, prefix = fleet_env["DUETIME_PG_DSN"], fleet_env["PREFIX"]
    base = {k: v for k, v in fleet_env.items() if k.startswith("DUETIME_")}
    sched_ports = {s: free_port() for s in SCHEDULERS}
    client_tls = service_client_tls(base)
    worker_ca = {"DUETIME_WORKER_CLIENT_CA_FILE": client_tls.ca_file} if mtls and client_tls else {}
    slots = {
        "api": Slot(
            "api",
            "duetime_api",
            {**base, "DUETIME_API_ADDRESS": f"127.0.0.1:{free_port()}"},
            "DUETIME_API_PORT",
        ),
        "relay": Slot("relay", "duetime_relay", dict(base), "DUETIME_RELAY_PORT"),
    }
    for s in SCHEDULERS:
        env = {
            **base,
            **scheduler_env(dsn, prefix, s),
            "DUETIME_SCHEDULER_ADDRESS": f"127.0.0.1:{sched_ports[s]}",
            "DUETIME_PARTITION_LEASE_TTL": str(PARTITION_TTL),
            "DUETIME_PARTITION_SAFETY_MARGIN": "2",
            "DUETIME_ATTEMPT_LEASE": str(ATTEMPT_LEASE),
            **worker_ca,
        }
        slots[s] = Slot(s, "duetime_scheduler", env, "DUETIME_SCHEDULER_PORT")
    group = f"duetime-chaos-{uuid.uuid4().hex[:8]}"
    for w in WORKERS:
        env = {
            **base,
            "DUETIME_SCHEDULER_TARGET": ",".join(f"127.0.0.1:{p}" for p in sched_ports.values()),
            "DUETIME_WORKER_TOKEN": "" if mtls else worker_token,
            "DUETIME_WORKER_ID": w,
            "DUETIME_WORKER_GROUP": group,
            "DUETIME_NOTIFY_GROUP": notify_group(group),
            "DUETIME_TARGET_ALLOW": "127.0.0.1",
            "DUETIME_HEARTBEAT_INTERVAL": str(HEARTBEAT),
        }
        slots[w] = Slot(w, "duetime_worker", env, "DUETIME_WORKER_PORT")
    return slots


async def _stop_all(slots: list[Slot]) -> None:
    """Stops every service at once (``Slot.stop`` stops one that never started, too)."""
    await asyncio.gather(*(slot.stop() for slot in slots))


@asynccontextmanager
async def chaos_fleet(directory: Path | None = None) -> AsyncIterator[Fleet]:
    """Everything started, the team made; yields the fleet and stops it all afterwards."""
    directory = directory or Path(tempfile.mkdtemp(prefix="duetime-chaos-"))
    (directory / "kafka").mkdir(parents=True, exist_ok=True)
    async with AsyncExitStack() as stack:
        # The three servers start at once: each start is mostly waiting for its process.
        async with asyncio.TaskGroup() as group:
            starting_postgres = group.create_task(stack.enter_async_context(private_postgres()))
            starting_etcd = group.create_task(
                stack.enter_async_context(private_etcd(directory / "etcd"))
            )
            starting_kafka = group.create_task(
                stack.enter_async_context(private_kafka(directory / "kafka"))
            )
        postgres, etcd, kafka = (
            starting_postgres.result(),
            starting_etcd.result(),
            starting_kafka.result(),
        )
        await create_topics(kafka.bootstrap, sorted(DISPATCH_TOPICS.values()), TOPIC_PARTITIONS)
        await create_topics(kafka.bootstrap, [DEAD_LETTER_TOPIC], partitions=1)
        conn = await asyncpg.connect(postgres.dsn, ssl=False)
        try:
            team_token = await create_team(conn, TEAM)
            worker_token = await create_worker_token(conn)
        finally:
            await conn.close()
        env = {
            **also_plaintext("postgres", "etcd", "kafka"),
            "DUETIME_PG_DSN": postgres.dsn,
            "DUETIME_ETCD_ENDPOINT": etcd.endpoint,
            "DUETIME_KAFKA_BOOTSTRAP": kafka.bootstrap,
            "DUETIME_SHUTDOWN_GRACE_SECONDS": "2",
            "PREFIX": new_prefix(),
        }
        client_tls = service_client_tls(env)
        mtls = client_tls is not None and bool(client_tls.cert_file)
        slots = _service_env(env, mtls, worker_token)
        stack.push_async_callback(_stop_all, list(slots.values()))
        # The services start at once, the workers once the schedulers they are given serve.
        await together([slots[name].start() for name in ("api", "relay", *SCHEDULERS)])
        await together([slots[name].start() for name in WORKERS])
        api = Api(slots["api"].env["DUETIME_API_ADDRESS"], team_token, env)
        stack.push_async_callback(api.close)
        yield Fleet(directory, postgres, etcd, kafka, env["PREFIX"], slots, api)
