"""The API service's settings, read once from the environment."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from duetime_infra.archive.settings import ArchiveSettings, read_archive
from duetime_infra.config import EnvReader, env_dsn
from duetime_infra.secrets.keyring import Keyring, read_keyring
from duetime_infra.tls import Link, TlsSettings, read_tls


@dataclass(frozen=True)
class Settings:
    listen_address: str
    pg_dsn: str
    pg_pool_size: int
    shutdown_grace_seconds: float
    # host:port of the Prometheus scrape endpoint; "" (unset, empty or off): no metrics.
    metrics_address: str
    tls: TlsSettings
    # Seals header and env values before they are stored (the API never opens them).
    secret_keys: Keyring
    # Where archived run history is read from (None: no archive).
    archive: ArchiveSettings | None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = EnvReader(environ)
        settings = cls(
            listen_address=env.address("DUETIME_API_ADDRESS", "127.0.0.1:50051"),
            pg_dsn=env_dsn(environ),
            pg_pool_size=env.integer("DUETIME_API_PG_POOL_SIZE", 10, low=1, high=200),
            shutdown_grace_seconds=env.seconds(
                "DUETIME_SHUTDOWN_GRACE_SECONDS", 10, low=0, high=600
            ).total_seconds(),
            metrics_address=env.optional_address("DUETIME_METRICS_ADDRESS"),
            tls=read_tls(env, serves=True, connects=[Link.POSTGRES]),
            secret_keys=read_keyring(env),
            archive=read_archive(env),
        )
        env.finish()
        return settings
