"""The console's settings, read once from the environment.

The console serves HTTPS with the service certificate every Duetime service reads
(``DUETIME_TLS_CERT_FILE``, ``DUETIME_TLS_KEY_FILE``) and reaches the API over gRPC, verified
with ``DUETIME_TLS_CA_FILE`` (or without TLS where ``DUETIME_PLAINTEXT`` names ``grpc``).
Sessions are sealed into their cookie with a keyring of their own
(``DUETIME_CONSOLE_SESSION_KEYS`` or ``..._FILE``, the keyring format of secrets at rest).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from duetime_infra.config import EnvReader
from duetime_infra.secrets.keyring import Keyring, read_keyring
from duetime_infra.tls import CERT_FILE, KEY_FILE, Link, TlsSettings, read_tls

SESSION_KEYS = "DUETIME_CONSOLE_SESSION_KEYS"
SESSION_KEYS_FILE = "DUETIME_CONSOLE_SESSION_KEYS_FILE"


@dataclass(frozen=True)
class MetricsTarget:
    """A service's Prometheus endpoint the fleet page reads: its role (``scheduler``) and
    URL."""

    service: str
    url: str


@dataclass(frozen=True)
class Settings:
    listen_address: str
    api_address: str
    tls: TlsSettings
    session_keys: Keyring
    # How long a sign-in lasts; the sealed cookie carries when it was made.
    session_lifetime: timedelta
    # The fleet page's sources; empty: the page says none is configured.
    metrics_targets: tuple[MetricsTarget, ...]
    shutdown_grace_seconds: float

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = EnvReader(environ)
        tls = read_tls(env, serves=False, connects=[Link.GRPC])
        if not tls.cert_file:
            env.problem(f"{CERT_FILE}, {KEY_FILE}: required, the console serves HTTPS only")
        settings = cls(
            listen_address=env.address("DUETIME_CONSOLE_ADDRESS", "127.0.0.1:8443"),
            api_address=env.address("DUETIME_CONSOLE_API", "127.0.0.1:50051"),
            tls=tls,
            session_keys=read_keyring(env, SESSION_KEYS, SESSION_KEYS_FILE),
            session_lifetime=env.seconds(
                "DUETIME_CONSOLE_SESSION_SECONDS", 8 * 3600, low=60, high=7 * 86400
            ),
            metrics_targets=_metrics_targets(env),
            shutdown_grace_seconds=env.seconds(
                "DUETIME_SHUTDOWN_GRACE_SECONDS", 10, low=0, high=600
            ).total_seconds(),
        )
        env.finish()
        return settings


def _metrics_targets(env: EnvReader) -> tuple[MetricsTarget, ...]:
    """``DUETIME_CONSOLE_METRICS``: ``service=url`` pairs, comma-separated
    (``scheduler=http://10.0.0.5:9465/metrics,relay=...``); a service may be named several
    times (one entry per scheduler)."""
    name = "DUETIME_CONSOLE_METRICS"
    raw = env.text(name, "")
    targets = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        service, sep, url = item.partition("=")
        if not sep or not service.isidentifier() or not url.startswith(("http://", "https://")):
            env.problem(f"{name}: {item!r} is not service=http(s)://host:port/metrics")
            continue
        targets.append(MetricsTarget(service, url))
    return tuple(targets)
