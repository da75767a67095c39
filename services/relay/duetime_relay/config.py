"""The relay's settings, read once from the environment."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from duetime_infra.config import ConfigError, EnvReader, env_dsn
from duetime_infra.kafka.topics import DEFAULT_KAFKA_BOOTSTRAP
from duetime_infra.pg.pool import TCP_KEEPALIVES
from duetime_infra.tls import Link, TlsSettings, read_tls

# A relay's transaction stays open while its batch is produced; PostgreSQL ends it after this
# long idle (and any statement after this long running), so a frozen relay cannot hold outbox
# row locks for longer. The produce timeout must fit inside it.
SESSION_TIMEOUT_SECONDS = 30


@dataclass(frozen=True)
class Settings:
    relay_id: str
    pg_dsn: str
    kafka_bootstrap: str
    health_address: str
    batch_size: int
    poll_interval: timedelta
    # The poll while the relay listens for new outbox rows (a safety net; see OutboxWake).
    idle_poll_interval: timedelta
    produce_timeout: timedelta
    reconcile_after: timedelta
    reconcile_interval: timedelta
    reconcile_batch_size: int
    shutdown_grace_seconds: float
    # host:port of the Prometheus scrape endpoint; "" (unset, empty or off): no metrics.
    metrics_address: str
    tls: TlsSettings

    @property
    def session_settings(self) -> dict[str, str]:
        """PostgreSQL session limits: the relay's row locks (outbox rows while a batch is
        produced, QUEUED runs while they are re-enqueued) last at most about 30 s."""
        timeout_ms = str(SESSION_TIMEOUT_SECONDS * 1000)
        return {
            "application_name": f"duetime-relay {self.relay_id}"[:63],
            "statement_timeout": timeout_ms,
            "idle_in_transaction_session_timeout": timeout_ms,
            "lock_timeout": "5000",
            **TCP_KEEPALIVES,
        }

    @property
    def listener_name(self) -> str:
        """The outbox listener's connection, as ``pg_stat_activity`` shows it."""
        return f"duetime-relay {self.relay_id} listen"[:63]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = EnvReader(environ)
        bootstrap = env.text("DUETIME_KAFKA_BOOTSTRAP", DEFAULT_KAFKA_BOOTSTRAP)
        settings = cls(
            relay_id=env.text("DUETIME_RELAY_ID", f"{socket.gethostname()}-{os.getpid()}"),
            pg_dsn=env_dsn(environ),
            kafka_bootstrap=bootstrap,
            health_address=env.address("DUETIME_RELAY_HEALTH_ADDRESS", "127.0.0.1:0"),
            batch_size=env.integer("DUETIME_RELAY_BATCH_SIZE", 500, low=1, high=20_000),
            poll_interval=env.seconds("DUETIME_RELAY_POLL_INTERVAL", 0.05, low=0.001, high=10),
            idle_poll_interval=env.seconds(
                "DUETIME_RELAY_IDLE_POLL_INTERVAL", 1, low=0.001, high=60
            ),
            produce_timeout=env.seconds(
                "DUETIME_RELAY_PRODUCE_TIMEOUT", 10, low=0.5, high=SESSION_TIMEOUT_SECONDS - 5
            ),
            reconcile_after=env.seconds("DUETIME_RECONCILE_AFTER", 60, low=1, high=86_400),
            reconcile_interval=env.seconds("DUETIME_RECONCILE_INTERVAL", 10, low=0.05, high=3600),
            reconcile_batch_size=env.integer(
                "DUETIME_RECONCILE_BATCH_SIZE", 500, low=1, high=10_000
            ),
            shutdown_grace_seconds=env.seconds(
                "DUETIME_SHUTDOWN_GRACE_SECONDS", 10, low=0, high=600
            ).total_seconds(),
            metrics_address=env.optional_address("DUETIME_METRICS_ADDRESS"),
            tls=read_tls(env, serves=False, connects=[Link.POSTGRES, Link.KAFKA]),
        )
        bad_bootstrap = [part for part in bootstrap.split(",") if not _is_address(part.strip())]
        try:
            env.finish()
        except ConfigError as error:
            if bad_bootstrap:
                raise ConfigError(f"{error}\n  {_bootstrap_error(bootstrap)}") from None
            raise
        if bad_bootstrap:
            raise ConfigError(f"invalid configuration:\n  {_bootstrap_error(bootstrap)}")
        return settings


def _is_address(text: str) -> bool:
    host, sep, port = text.rpartition(":")
    return bool(sep and host and port.isdigit() and 0 < int(port) <= 65535)


def _bootstrap_error(raw: str) -> str:
    return f"DUETIME_KAFKA_BOOTSTRAP={raw!r}: expected host:port[,host:port...]"
