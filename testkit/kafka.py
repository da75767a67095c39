"""Kafka for tests: topics of one's own, reading exactly what was published between two points,
and a private single-node broker that a test may stop and start without disturbing anyone."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import shutil
import signal
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from duetime.events.v1.events_pb2 import RunDispatch
from duetime_core.jobspec import Priority
from duetime_infra.kafka import groups
from testkit.polling import eventually
from testkit.processes import REPO

if TYPE_CHECKING:
    from testkit.tls import Certs


def shared_bootstrap() -> str:
    """The local stack's broker (``scripts/stack env``)."""
    return os.environ["DUETIME_KAFKA_BOOTSTRAP"]


def unique_topic(stem: str = "relay") -> str:
    return f"duetime-test.{stem}.{uuid.uuid4().hex[:12]}"


async def create_topics(bootstrap: str, names: Iterable[str], partitions: int = 3) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    await admin.start()
    try:
        await admin.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=1) for name in names]
        )
    finally:
        await admin.close()


async def delete_topics(bootstrap: str, names: Iterable[str]) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    await admin.start()
    try:
        await admin.delete_topics(list(names))
    finally:
        await admin.close()


@asynccontextmanager
async def own_topics(bootstrap: str, names: list[str], partitions: int = 3) -> AsyncIterator[None]:
    """Topics created for one test and deleted after it."""
    await create_topics(bootstrap, names, partitions)
    try:
        yield
    finally:
        await delete_topics(bootstrap, names)


@asynccontextmanager
async def dispatch_topics(stem: str, partitions: int = 1) -> AsyncIterator[dict[Priority, str]]:
    """A dispatch topic per priority of one test's own, deleted after it."""
    names = {p: unique_topic(f"{stem}-{p.value.lower()}") for p in Priority}
    async with own_topics(shared_bootstrap(), list(names.values()), partitions=partitions):
        yield names


async def publish_dispatches(topic: str, count: int) -> None:
    """``count`` dispatch messages, run ids ``<topic>-<n>``, on the shared broker."""
    producer = AIOKafkaProducer(bootstrap_servers=shared_bootstrap())
    await producer.start()
    try:
        for i in range(count):
            message = RunDispatch(run_id=f"{topic}-{i}", dispatch_id=f"{topic}/{i}")
            await producer.send_and_wait(topic, message.SerializeToString())
    finally:
        await producer.stop()


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    headers: dict[str, bytes]
    timestamp_ms: int = 0  # the record's timestamp (producer create time), epoch ms

    @property
    def dispatch(self) -> RunDispatch:
        return RunDispatch.FromString(self.value)


Offsets = dict[TopicPartition, int]


async def end_offsets(bootstrap: str, topics: Iterable[str]) -> Offsets:
    """The next offset of every partition of ``topics``: where a reader starts to see only
    what is published from now on."""
    return await groups.end_offsets(bootstrap, topics)


async def committed_offset(bootstrap: str, group: str, tp: TopicPartition) -> int | None:
    """The offset ``group`` committed for ``tp``; None before its first commit."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group)
    await consumer.start()
    try:
        offset: int | None = await consumer.committed(tp)
        return offset
    finally:
        await consumer.stop()


async def read_between(
    bootstrap: str, start: Offsets, end: Offsets, within: float = 30
) -> list[Record]:
    """Every record from ``start`` up to (not including) ``end``, partition by partition."""
    wanted = {tp: (start.get(tp, 0), stop) for tp, stop in end.items() if stop > start.get(tp, 0)}
    if not wanted:
        return []
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, max_poll_records=5000
    )
    await consumer.start()
    records: list[Record] = []
    try:
        consumer.assign(list(wanted))
        for tp, (first, _) in wanted.items():
            consumer.seek(tp, first)
        remaining = dict(wanted)
        deadline = time.monotonic() + within
        while remaining:
            if time.monotonic() > deadline:
                raise AssertionError(f"records missing before the end offsets: {remaining}")
            batches = await consumer.getmany(timeout_ms=500)
            for tp, batch in batches.items():
                stop = wanted[tp][1]
                for r in batch:
                    if r.offset < stop:
                        records.append(
                            Record(
                                r.topic,
                                r.partition,
                                r.offset,
                                r.key,
                                r.value,
                                {k: bytes(v) for k, v in r.headers},
                                r.timestamp,
                            )
                        )
                if batch and batch[-1].offset >= stop - 1:
                    remaining.pop(tp, None)
    finally:
        await consumer.stop()
    return records


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _port_open(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True
    return False


def kafka_libs() -> Path:
    stack = Path(os.environ.get("DUETIME_STACK_DIR", REPO / ".stack"))
    libs = stack / "kafka" / "libs"
    if not any(libs.glob("kafka_2.13-*.jar")):
        raise AssertionError(f"no Kafka jars in {libs}: run scripts/stack up")
    return libs


class PrivateKafka:
    """A single-node KRaft broker of one test's own, on free ports, with its data in
    ``directory``: formatted and started the way scripts/lib/stack_kafka.sh does it, from the
    stack's jars. It can be stopped and started again on the same ports and data. Given
    ``certs``, it also serves an SSL listener with them (``ssl_bootstrap``)."""

    def __init__(self, directory: Path, certs: Certs | None = None) -> None:
        self.directory = directory
        self.port = free_port()
        self.controller_port = free_port()
        self.certs = certs
        self.ssl_port = free_port() if certs is not None else 0
        self.libs = kafka_libs()
        self.java = shutil.which("java") or "java"
        self._process: asyncio.subprocess.Process | None = None
        self._props = directory / "server.properties"
        self._log4j = directory / "log4j.properties"
        self.log = directory / "kafka.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def ssl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.ssl_port}"

    def _listeners(self) -> list[str]:
        listeners = f"PLAINTEXT://127.0.0.1:{self.port}"
        if self.certs is not None:
            listeners += f",SSL://127.0.0.1:{self.ssl_port}"
        lines = [
            f"listeners={listeners},CONTROLLER://127.0.0.1:{self.controller_port}",
            f"advertised.listeners={listeners}",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL",
        ]
        if self.certs is not None:
            lines += [
                "ssl.keystore.type=PKCS12",
                f"ssl.keystore.location={self.certs.keystore}",
                f"ssl.keystore.password={self.certs.keystore_password}",
            ]
        return lines

    def _write_config(self) -> None:
        data = self.directory / "data"
        data.mkdir(parents=True, exist_ok=True)
        self._props.write_text(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    "node.id=1",
                    f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}",
                    *self._listeners(),
                    "controller.listener.names=CONTROLLER",
                    "inter.broker.listener.name=PLAINTEXT",
                    f"log.dirs={data}",
                    "num.partitions=3",
                    "auto.create.topics.enable=false",
                    "group.initial.rebalance.delay.ms=0",
                    "offsets.topic.replication.factor=1",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "offsets.topic.num.partitions=3",
                    "transaction.state.log.num.partitions=3",
                    # Shut down quickly: one node has nobody to hand leadership to.
                    "controlled.shutdown.enable=false",
                    # Started again, the broker waits for its previous registration's session
                    # to expire (9 s by default) before it serves: short, so a restart is.
                    "broker.session.timeout.ms=3000",
                    "broker.heartbeat.interval.ms=500",
                    "",
                ]
            )
        )
        self._log4j.write_text(
            "log4j.rootLogger=WARN, stdout\n"
            "log4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
            "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
            "log4j.logger.kafka.server.KafkaServer=INFO\n"
            "log4j.logger.kafka.server.BrokerServer=INFO\n"
        )

    def _tool(self, *args: str) -> list[str]:
        """A Kafka command-line tool, tuned for a quick JVM start."""
        return [
            self.java,
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            f"-Dlog4j.configuration=file:{self._log4j}",
            "-cp",
            f"{self.libs}/*",
            *args,
        ]

    async def format(self) -> None:
        self._write_config()
        # A cluster id in Kafka's form: 16 random bytes, URL-safe base64 without padding; like
        # Kafka's own Uuid.randomUuid, never one that starts with "-" (it would read as an option).
        cluster_id = "-"
        while cluster_id.startswith("-"):
            cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        proc = await asyncio.create_subprocess_exec(
            *self._tool(
                "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(self._props)
            ),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            stdin=asyncio.subprocess.DEVNULL,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        if proc.returncode != 0:
            raise AssertionError(f"kafka format failed: {out.decode(errors='replace')}")

    async def start(self, within: float = 60) -> None:
        """Starts the broker and waits until it answers metadata requests."""
        assert self._process is None
        with self.log.open("ab") as log:
            self._process = await asyncio.create_subprocess_exec(
                self.java,
                "-Xms256m",
                "-Xmx512m",
                "-XX:+UseSerialGC",
                "-Djava.awt.headless=true",
                f"-Dlog4j.configuration=file:{self._log4j}",
                f"-Dkafka.logs.dir={self.directory}",
                "-cp",
                f"{self.libs}/*",
                "kafka.Kafka",
                str(self._props),
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                stdin=asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + within
        while True:
            if self._process.returncode is not None:
                raise AssertionError(f"private kafka exited:\n{self.tail()}")
            if _port_open(self.port) and await self._answers():
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"private kafka not ready in {within} s:\n{self.tail()}")
            await asyncio.sleep(0.3)

    async def _answers(self) -> bool:
        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=3000)
        try:
            await admin.start()
            await admin.list_topics()
            return True
        except Exception:
            return False
        finally:
            with contextlib.suppress(Exception):
                await admin.close()

    async def stop(self, within: float = 30) -> None:
        """SIGTERM, then SIGKILL after ``within`` seconds; returns once the port is closed."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), within)
            except TimeoutError:
                process.kill()
                await process.wait()
        await eventually(lambda: not _port_open(self.port), 10, f"port {self.port} closed")

    def tail(self, lines: int = 40) -> str:
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


@asynccontextmanager
async def private_kafka(directory: Path, certs: Certs | None = None) -> AsyncIterator[PrivateKafka]:
    kafka = PrivateKafka(directory, certs)
    await kafka.format()
    await kafka.start()
    try:
        yield kafka
    finally:
        await kafka.stop()
