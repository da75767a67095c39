"""TLS settings for every connection a service serves or makes, read by one reader for all
services, and the SSL contexts the drivers take.

Every connection is TLS unless ``DUETIME_PLAINTEXT`` names it (``grpc``: Duetime's own gRPC,
served by the api and the scheduler and called by the worker; ``postgres``, ``etcd``,
``kafka``; or ``all``). A service whose TLS settings are missing refuses to start, naming the
variables; a plaintext connection is logged as a WARNING when the service starts.

- ``DUETIME_TLS_CA_FILE``: the CA bundle that verifies every server this process connects to.
- ``DUETIME_TLS_CERT_FILE``, ``DUETIME_TLS_KEY_FILE``: this process's certificate (chain) and
  key, served by the api and the scheduler (read again when the files change) and presented as
  a client certificate to the servers that ask for one (the scheduler to workers, etcd, ...).
- ``DUETIME_PG_SSLMODE``: ``verify-full`` (default: the CA and the host name) or ``verify-ca``.
"""

from __future__ import annotations

import enum
import logging
import os
import ssl
from collections.abc import Iterable
from dataclasses import dataclass

from duetime_infra.config import EnvReader

log = logging.getLogger(__name__)

CA_FILE = "DUETIME_TLS_CA_FILE"
CERT_FILE = "DUETIME_TLS_CERT_FILE"
KEY_FILE = "DUETIME_TLS_KEY_FILE"
PLAINTEXT = "DUETIME_PLAINTEXT"
PG_SSLMODE = "DUETIME_PG_SSLMODE"
_PG_SSLMODES = ("verify-full", "verify-ca")


class Link(enum.StrEnum):
    """A kind of connection whose TLS can be turned off by name."""

    GRPC = "grpc"
    POSTGRES = "postgres"
    ETCD = "etcd"
    KAFKA = "kafka"


@dataclass(frozen=True)
class ClientTls:
    """How to reach one kind of server over TLS: the CA that verifies it, whether its name is
    checked too, and this process's certificate and key ("" when it has none)."""

    ca_file: str
    cert_file: str = ""
    key_file: str = ""
    check_hostname: bool = True

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.ca_file)
        context.check_hostname = self.check_hostname
        if self.cert_file:
            context.load_cert_chain(self.cert_file, self.key_file)
        return context

    def read(self) -> tuple[bytes, bytes | None, bytes | None]:
        """The CA, key and certificate as bytes (gRPC's credentials take them so)."""
        key = read_bytes(self.key_file) if self.key_file else None
        cert = read_bytes(self.cert_file) if self.cert_file else None
        return read_bytes(self.ca_file), key, cert


@dataclass(frozen=True)
class ServerTls:
    """A gRPC server's certificate and key, and the CA that signs the client certificates it
    requires ("" when it asks for none)."""

    cert_file: str
    key_file: str
    client_ca_file: str = ""


@dataclass(frozen=True)
class TlsSettings:
    ca_file: str
    cert_file: str
    key_file: str
    pg_sslmode: str
    plaintext: frozenset[Link]
    # The connections of the service these settings are for.
    uses: frozenset[Link] = frozenset()

    def client(self, link: Link) -> ClientTls | None:
        """How to reach ``link``'s servers; None when it is plaintext."""
        if link in self.plaintext:
            return None
        check = link is not Link.POSTGRES or self.pg_sslmode == "verify-full"
        return ClientTls(self.ca_file, self.cert_file, self.key_file, check)

    def context(self, link: Link) -> ssl.SSLContext | None:
        """An SSL context for ``link``'s servers (asyncpg, aiokafka); None when plaintext."""
        tls = self.client(link)
        return None if tls is None else tls.ssl_context()

    def server(self, client_ca_file: str = "") -> ServerTls | None:
        """What a gRPC server serves; None when gRPC is plaintext."""
        if Link.GRPC in self.plaintext:
            return None
        return ServerTls(self.cert_file, self.key_file, client_ca_file)


def read_tls(env: EnvReader, *, serves: bool, connects: Iterable[Link]) -> TlsSettings:
    """The TLS settings of a service that serves gRPC (``serves``) and connects to
    ``connects``; every problem goes to ``env``, reported with the service's others."""
    plaintext = _plaintext(env)
    connects = frozenset(connects)
    settings = TlsSettings(
        ca_file=readable_file(env, CA_FILE),
        cert_file=readable_file(env, CERT_FILE),
        key_file=readable_file(env, KEY_FILE),
        pg_sslmode=env.text(PG_SSLMODE, "verify-full"),
        plaintext=plaintext,
        uses=(connects | {Link.GRPC}) if serves else connects,
    )
    if settings.pg_sslmode not in _PG_SSLMODES:
        env.problem(f"{PG_SSLMODE}={settings.pg_sslmode!r}: one of {', '.join(_PG_SSLMODES)}")
    verified = sorted(link.value for link in connects - plaintext)
    if verified and not settings.ca_file:
        env.problem(
            f"{CA_FILE}: required to verify the {', '.join(verified)} servers over TLS "
            f"(or {PLAINTEXT}={','.join(verified)} to connect without TLS)"
        )
    serving = serves and Link.GRPC not in plaintext
    if bool(settings.cert_file) != bool(settings.key_file) or (serving and not settings.cert_file):
        why = "required to serve gRPC over TLS" if serving else "both or neither"
        env.problem(f"{CERT_FILE}, {KEY_FILE}: {why} (or {PLAINTEXT}=grpc)")
    elif settings.cert_file and settings.key_file:
        _check_pair(env, settings.cert_file, settings.key_file)
    if settings.ca_file:
        check_ca_file(env, CA_FILE, settings.ca_file)
    return settings


def postgres_tls_from_env() -> ssl.SSLContext | None:
    """For operator commands: PostgreSQL's TLS as the services' settings give it (the
    environment); a bad setting raises ConfigError."""
    env = EnvReader()
    settings = read_tls(env, serves=False, connects=[Link.POSTGRES])
    env.finish()
    return settings.context(Link.POSTGRES)


def readable_file(env: EnvReader, name: str) -> str:
    """A path setting: "" when unset; a path that is not a readable file is a problem."""
    path = env.text(name, "").strip()
    if path and not (os.path.isfile(path) and os.access(path, os.R_OK)):
        env.problem(f"{name}={path!r}: not a readable file")
        return ""
    return path


def warn_plaintext(settings: TlsSettings) -> None:
    """One WARNING at start naming the connections of this service that are not encrypted."""
    links = sorted(link.value for link in settings.uses & settings.plaintext)
    if links:
        log.warning(
            "PLAINTEXT connections: %s (%s): credentials and secrets cross the network in clear",
            ", ".join(links),
            PLAINTEXT,
            extra={"action": "plaintext", "links": links},
        )


def _plaintext(env: EnvReader) -> frozenset[Link]:
    raw = env.text(PLAINTEXT, "")
    names = {part.strip().lower() for part in raw.split(",") if part.strip()}
    if "all" in names:
        return frozenset(Link)
    known = {link.value for link in Link}
    unknown = sorted(names - known)
    if unknown:
        env.problem(
            f"{PLAINTEXT}={raw!r}: unknown {', '.join(unknown)} "
            f"(expected all, or any of {', '.join(sorted(known))})"
        )
    return frozenset(Link(name) for name in names & known)


def _check_pair(env: EnvReader, cert_file: str, key_file: str) -> None:
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert_file, key_file)
    except (ssl.SSLError, OSError) as error:
        env.problem(f"{CERT_FILE}, {KEY_FILE}: not a matching PEM certificate and key ({error})")


def check_ca_file(env: EnvReader, name: str, path: str) -> None:
    """A CA bundle setting must hold certificates."""
    try:
        ssl.create_default_context(cafile=path)
    except (ssl.SSLError, OSError) as error:
        env.problem(f"{name}={path!r}: not a PEM CA bundle ({error})")


def read_bytes(path: str) -> bytes:
    """A TLS file's contents."""
    with open(path, "rb") as file:
        return file.read()
