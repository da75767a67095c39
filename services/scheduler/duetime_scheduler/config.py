"""The scheduler's settings, read once from the environment."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from duetime_infra.archive.settings import ArchiveSettings, read_archive
from duetime_infra.config import EnvReader, env_dsn
from duetime_infra.pg.pool import TCP_KEEPALIVES
from duetime_infra.secrets.keyring import Keyring, read_keyring
from duetime_infra.tls import PLAINTEXT, Link, TlsSettings, check_ca_file, read_tls, readable_file

WORKER_CLIENT_CA_FILE = "DUETIME_WORKER_CLIENT_CA_FILE"


@dataclass(frozen=True)
class Settings:
    scheduler_id: str
    listen_address: str
    pg_dsn: str
    pg_pool_size: int
    etcd_endpoint: str
    etcd_prefix: str
    etcd_epoch: int
    partition_lease_ttl: timedelta
    partition_safety_margin: timedelta
    claim_lookahead: timedelta
    # How far the look-ahead may grow for a herd, and the claim rate (runs a second) it is
    # grown by: duetime_core.lookahead.
    claim_horizon: timedelta
    claim_rate: int
    claim_batch_size: int
    claim_poll_interval: timedelta
    # The most runs of this scheduler's partitions dispatched and not yet started (None: no
    # bound); more wait in PostgreSQL and go in fair order across teams as it frees.
    dispatch_credit: int | None
    attempt_lease: timedelta
    attempt_grace: timedelta
    shutdown_grace_seconds: float
    # host:port of the Prometheus scrape endpoint; "" (unset, empty or off): no metrics.
    metrics_address: str
    tls: TlsSettings
    # The CA of the workers' client certificates: when set, WorkerService requires one signed by
    # it (mTLS), and a worker so verified needs no token; "" (unset): workers send tokens.
    worker_client_ca_file: str
    # Opens the header and env values of a run's target when its attempt starts.
    secret_keys: Keyring
    # Where run history is archived before it is dropped (None: no archive; history is
    # dropped after 30 days).
    archive: ArchiveSettings | None

    @property
    def session_settings(self) -> dict[str, str]:
        """PostgreSQL session limits that keep a frozen scheduler from stalling a new owner.

        Statements and idle transactions are cut well inside the partition lease TTL, so by
        the time another scheduler can own a partition, no lock of ours on it survives.
        """
        ttl_ms = int(self.partition_lease_ttl.total_seconds() * 1000)
        return {
            "statement_timeout": str(ttl_ms * 3 // 10),
            "idle_in_transaction_session_timeout": str(ttl_ms * 4 // 10),
            "lock_timeout": str(ttl_ms * 2 // 10),
            **TCP_KEEPALIVES,
        }

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = EnvReader(environ)
        default_id = f"{socket.gethostname()}-{os.getpid()}"
        settings = cls(
            scheduler_id=env.text("DUETIME_SCHEDULER_ID", default_id),
            listen_address=env.address("DUETIME_SCHEDULER_ADDRESS", "127.0.0.1:50052"),
            pg_dsn=env_dsn(environ),
            pg_pool_size=env.integer("DUETIME_SCHEDULER_PG_POOL_SIZE", 10, low=2, high=200),
            etcd_endpoint=env.address("DUETIME_ETCD_ENDPOINT", "127.0.0.1:52379"),
            etcd_prefix=env.text("DUETIME_ETCD_PREFIX", "/duetime/"),
            etcd_epoch=env.integer("DUETIME_ETCD_EPOCH", 0, low=0, high=2**31),
            partition_lease_ttl=env.seconds("DUETIME_PARTITION_LEASE_TTL", 10, low=2, high=300),
            # Claims stop this long before the lease could expire in etcd: it covers clock-rate
            # error and a commit in flight (statements are cut at 30% of the TTL).
            partition_safety_margin=env.seconds(
                "DUETIME_PARTITION_SAFETY_MARGIN", 2, low=0.1, high=60
            ),
            claim_lookahead=env.seconds("DUETIME_CLAIM_LOOKAHEAD", 10, low=0, high=60),
            claim_horizon=env.seconds("DUETIME_CLAIM_HORIZON", 60, low=0, high=600),
            claim_rate=env.integer("DUETIME_CLAIM_RATE", 1_000, low=1, high=1_000_000),
            claim_batch_size=env.integer("DUETIME_CLAIM_BATCH_SIZE", 500, low=1, high=10_000),
            claim_poll_interval=env.seconds("DUETIME_CLAIM_POLL_INTERVAL", 0.2, low=0.01, high=10),
            dispatch_credit=env.integer("DUETIME_DISPATCH_CREDIT", 10_000, low=0, high=10_000_000)
            or None,
            attempt_lease=env.seconds("DUETIME_ATTEMPT_LEASE", 60, low=1, high=3600),
            attempt_grace=env.seconds("DUETIME_ATTEMPT_GRACE", 30, low=0, high=3600),
            shutdown_grace_seconds=env.seconds(
                "DUETIME_SHUTDOWN_GRACE_SECONDS", 10, low=0, high=600
            ).total_seconds(),
            metrics_address=env.optional_address("DUETIME_METRICS_ADDRESS"),
            tls=read_tls(env, serves=True, connects=[Link.POSTGRES, Link.ETCD]),
            worker_client_ca_file=readable_file(env, WORKER_CLIENT_CA_FILE),
            secret_keys=read_keyring(env),
            archive=read_archive(env),
        )
        if settings.worker_client_ca_file:
            check_ca_file(env, WORKER_CLIENT_CA_FILE, settings.worker_client_ca_file)
            if Link.GRPC in settings.tls.plaintext:
                env.problem(f"{WORKER_CLIENT_CA_FILE}: client certificates need TLS ({PLAINTEXT})")
        env.finish()
        return settings
