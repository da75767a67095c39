"""The worker's settings, read once from the environment."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

from duetime_core.notifications import NOTIFY_GIVE_UP
from duetime_infra.config import ConfigError, EnvReader
from duetime_infra.grpc.channels import target_of
from duetime_infra.tls import Link, TlsSettings, read_tls
from duetime_worker.herd.knobs import (
    DEFAULT_CONCURRENCY,
    DEFAULT_CONNECTIONS_PER_HOST,
    DEFAULT_LAUNCHER_CONCURRENCY,
    DEFAULT_MAX_PENDING,
    DEFAULT_START_CONCURRENCY,
)
from duetime_worker.targets.container.images import ImagePolicy
from duetime_worker.targets.container.podman import PULL_POLICIES, PodmanSettings
from duetime_worker.targets.http.allow_list import TargetPolicy
from duetime_worker.targets.http.hosts import CONNECT_TIMEOUT
from duetime_worker.targets.http.signer import DEFAULT_ISSUER

DEFAULT_KAFKA_BOOTSTRAP = "127.0.0.1:59092"
# DUETIME_CONTAINER_LAUNCHER: what runs container targets.
LAUNCHERS = ("off", "local", "podman")


@dataclass(frozen=True)
class Settings:
    worker_id: str
    # "" when the worker authenticates with its client certificate alone (mTLS).
    worker_token: str
    kafka_bootstrap: str
    # The schedulers' addresses (host:port), the first reachable one used; a name may resolve
    # to several.
    scheduler_addresses: tuple[str, ...]
    # Attempts executing at once (execution slots).
    concurrency: int
    # Starts asked for at once: the queue in front of them is where runs wait when the
    # scheduler is the bottleneck, so it is shared among teams in weighted fair order.
    start_concurrency: int
    # Attempts started ahead of their runs' time and held until it (0: none started ahead).
    early_starts: int
    # HTTP connections to one target host at once; 0: only the total (one a slot) bounds them.
    connections_per_host: int
    # The longest an HTTP target's connection (TCP and TLS) may take; the attempt's lease must
    # outlast it when its call is handed to the client.
    connect_timeout: float
    # Messages taken from Kafka and not yet answered: those held until their effective time
    # (which take no slot), waiting for a slot or being started. Attempts started are bounded
    # by the slots and the early starts instead.
    max_pending: int
    group: str
    heartbeat_interval: float
    # Comma-separated host patterns and CIDR networks HTTP targets may reach; empty: public
    # addresses only.
    target_allow: tuple[str, ...]
    # Executables the local-process launcher may run; empty: container targets are refused.
    local_launcher_commands: tuple[str, ...]
    # Local processes running at once, at most.
    local_launcher_concurrency: int
    # What runs container targets: off, local (processes of the permitted commands) or podman.
    container_launcher: str
    # Image name patterns the podman launcher may run (see ``images``).
    container_images: tuple[str, ...]
    podman: PodmanSettings
    health_address: str
    shutdown_grace_seconds: float
    # host:port of the Prometheus scrape endpoint; "" (unset, empty or off): no metrics.
    metrics_address: str
    # Dead-letter notifications: the consumer group (one delivery per group), deliveries at
    # once, seconds per request, and seconds after which a failing one is abandoned.
    notify_group: str
    notify_concurrency: int
    notify_timeout: float
    notify_give_up_after: float
    # The `iss` of the ID tokens of signed calls: the API's public address, as targets know it.
    signing_issuer: str
    tls: TlsSettings

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = EnvReader(environ)
        source = os.environ if environ is None else environ
        token = env.text("DUETIME_WORKER_TOKEN", "")
        max_pending = env.integer(
            "DUETIME_WORKER_MAX_PENDING", DEFAULT_MAX_PENDING, low=1, high=100_000
        )
        settings = cls(
            worker_id=env.text("DUETIME_WORKER_ID", f"{socket.gethostname()}-{os.getpid()}"),
            worker_token=token,
            kafka_bootstrap=env.text("DUETIME_KAFKA_BOOTSTRAP", DEFAULT_KAFKA_BOOTSTRAP),
            scheduler_addresses=env.addresses("DUETIME_SCHEDULER_TARGET", "127.0.0.1:50052"),
            **_capacity(env, max_pending),
            **_http(env, source),
            group=env.text("DUETIME_WORKER_GROUP", "duetime-workers"),
            heartbeat_interval=_seconds(env, "DUETIME_HEARTBEAT_INTERVAL", 20, 0.05, 3600),
            **_launchers(env, source),
            health_address=env.address("DUETIME_WORKER_HEALTH_ADDRESS", "127.0.0.1:0"),
            shutdown_grace_seconds=_seconds(env, "DUETIME_SHUTDOWN_GRACE_SECONDS", 10, 0, 600),
            notify_group=env.text("DUETIME_NOTIFY_GROUP", "duetime-notifiers"),
            notify_concurrency=env.integer("DUETIME_NOTIFY_CONCURRENCY", 32, low=1, high=1000),
            notify_timeout=_seconds(env, "DUETIME_NOTIFY_TIMEOUT_SECONDS", 10, 0.1, 300),
            notify_give_up_after=_seconds(
                env,
                "DUETIME_NOTIFY_GIVE_UP_SECONDS",
                NOTIFY_GIVE_UP.total_seconds(),
                1,
                7 * 24 * 3600,
            ),
            metrics_address=env.optional_address("DUETIME_METRICS_ADDRESS"),
            signing_issuer=env.text("DUETIME_SIGNING_ISSUER", DEFAULT_ISSUER),
            tls=read_tls(env, serves=False, connects=[Link.GRPC, Link.KAFKA]),
        )
        _report_all(env, _problems(settings, token))
        return settings


# Groups of settings, each read by its helper (in from_env's order: the order problems are told).


class _Capacity(TypedDict):
    max_pending: int
    concurrency: int
    start_concurrency: int
    early_starts: int


class _Http(TypedDict):
    connections_per_host: int
    connect_timeout: float
    target_allow: tuple[str, ...]


class _Launchers(TypedDict):
    local_launcher_commands: tuple[str, ...]
    local_launcher_concurrency: int
    container_launcher: str
    container_images: tuple[str, ...]
    podman: PodmanSettings


def _capacity(env: EnvReader, max_pending: int) -> _Capacity:
    """How much the worker takes on at once: messages held, slots, starts, early starts."""
    return _Capacity(
        max_pending=max_pending,
        # Unset, the slots stay within a MAX_PENDING set below their default, as they were
        # when it bounded the attempts running too.
        concurrency=env.integer(
            "DUETIME_WORKER_CONCURRENCY", min(DEFAULT_CONCURRENCY, max_pending), low=1, high=10_000
        ),
        start_concurrency=env.integer(
            "DUETIME_WORKER_START_CONCURRENCY", DEFAULT_START_CONCURRENCY, low=1, high=10_000
        ),
        # Unset, every message held may be started ahead of its time: its calls then need
        # no start of their own at the instant (they are held apart from the slots, which
        # stay free for runs whose time has come).
        early_starts=env.integer("DUETIME_WORKER_EARLY_STARTS", max_pending, low=0, high=100_000),
    )


def _http(env: EnvReader, source: Mapping[str, str]) -> _Http:
    """HTTP targets: connections to one host, the connect timeout, the allow-list."""
    return _Http(
        connections_per_host=env.integer(
            "DUETIME_HTTP_CONNECTIONS_PER_HOST", DEFAULT_CONNECTIONS_PER_HOST, low=0, high=100_000
        ),
        connect_timeout=_seconds(env, "DUETIME_HTTP_CONNECT_TIMEOUT", CONNECT_TIMEOUT, 0.05, 60),
        target_allow=_items(source.get("DUETIME_TARGET_ALLOW", "")),
    )


def _launchers(env: EnvReader, source: Mapping[str, str]) -> _Launchers:
    """Container targets: which launcher runs them, and its settings."""
    commands = source.get("DUETIME_LOCAL_LAUNCHER_COMMANDS", "")
    return _Launchers(
        local_launcher_commands=_items(commands),
        local_launcher_concurrency=env.integer(
            "DUETIME_LOCAL_LAUNCHER_CONCURRENCY", DEFAULT_LAUNCHER_CONCURRENCY, low=1, high=1000
        ),
        container_launcher=env.text(
            "DUETIME_CONTAINER_LAUNCHER", "local" if commands.strip() else "off"
        ),
        container_images=_items(source.get("DUETIME_CONTAINER_IMAGES", "")),
        podman=_podman_settings(env),
    )


def _seconds(env: EnvReader, name: str, default: float, low: float, high: float) -> float:
    return env.seconds(name, default, low=low, high=high).total_seconds()


def _problems(settings: Settings, token: str) -> list[str]:
    """What is wrong across the variables, each read fine on its own."""
    problems: list[str] = []
    grpc_tls = settings.tls.client(Link.GRPC)
    if not token and (grpc_tls is None or not grpc_tls.cert_file):
        problems.append(
            "DUETIME_WORKER_TOKEN: required (a worker token), unless the worker has a client "
            "certificate (DUETIME_TLS_CERT_FILE) for a scheduler that requires them"
        )
    if not settings.worker_id or len(settings.worker_id) > 200:
        problems.append("DUETIME_WORKER_ID: 1 to 200 characters")
    if not settings.group:
        problems.append("DUETIME_WORKER_GROUP: must not be empty")
    try:
        target_of(settings.scheduler_addresses)
    except ValueError as error:
        problems.append(f"DUETIME_SCHEDULER_TARGET: {error}")
    if not settings.notify_group or settings.notify_group == settings.group:
        problems.append("DUETIME_NOTIFY_GROUP: not empty, and not DUETIME_WORKER_GROUP")
    try:
        TargetPolicy.parse(settings.target_allow)
    except ValueError as error:
        problems.append(f"DUETIME_TARGET_ALLOW: {error}")
    problems += _launcher_problems(settings)
    return problems


def _report_all(env: EnvReader, problems: list[str]) -> None:
    """Raises one ConfigError naming every bad variable: unreadable ones and ``problems``."""
    try:
        env.finish()
    except ConfigError as error:
        if problems:
            raise ConfigError(f"{error}\n  " + "\n  ".join(problems)) from None
        raise
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))


def _items(raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def _podman_settings(env: EnvReader) -> PodmanSettings:
    return PodmanSettings(
        command=env.text("DUETIME_PODMAN_COMMAND", "podman"),
        pull=env.text("DUETIME_PODMAN_PULL", "never"),
        network=env.text("DUETIME_PODMAN_NETWORK", ""),
        memory=env.text("DUETIME_PODMAN_MEMORY", ""),
        cpus=env.text("DUETIME_PODMAN_CPUS", ""),
        # Stop, then kill, then report within the scheduler's DUETIME_ATTEMPT_GRACE (30 s).
        stop_seconds=env.integer("DUETIME_PODMAN_STOP_SECONDS", 5, low=0, high=20),
        sweep_interval=env.seconds(
            "DUETIME_PODMAN_SWEEP_SECONDS", 30, low=0.1, high=3600
        ).total_seconds(),
        concurrency=env.integer(
            "DUETIME_PODMAN_CONCURRENCY", DEFAULT_LAUNCHER_CONCURRENCY, low=1, high=1000
        ),
    )


def _launcher_problems(settings: Settings) -> list[str]:
    launcher = settings.container_launcher
    if launcher not in LAUNCHERS:
        return [f"DUETIME_CONTAINER_LAUNCHER={launcher!r}: one of {', '.join(LAUNCHERS)}"]
    problems = []
    if launcher == "local" and not settings.local_launcher_commands:
        problems.append("DUETIME_LOCAL_LAUNCHER_COMMANDS: required by the local launcher")
    if launcher == "podman":
        if not settings.container_images:
            problems.append(
                "DUETIME_CONTAINER_IMAGES: required by the podman launcher "
                "(image name patterns, e.g. registry.example.com/team-a/*)"
            )
        if settings.podman.pull not in PULL_POLICIES:
            problems.append(
                f"DUETIME_PODMAN_PULL={settings.podman.pull!r}: one of {', '.join(PULL_POLICIES)}"
            )
        if not settings.podman.command:
            problems.append("DUETIME_PODMAN_COMMAND: must not be empty")
    try:
        ImagePolicy.parse(settings.container_images)
    except ValueError as error:
        problems.append(f"DUETIME_CONTAINER_IMAGES: {error}")
    return problems
