"""TLS for tests: throwaway certificates (``scripts/certs``, as the stack makes them), gRPC
channels that reach the services the way a worker does (from the same settings), the service
settings that put every connection on TLS where the stack serves it, and the certificate a
server hands a new connection."""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from grpc import aio

from duetime_infra.config import EnvReader
from duetime_infra.grpc.tls import channel_credentials
from duetime_infra.tls import ClientTls, Link, ServerTls, read_tls
from testkit.processes import REPO


@dataclass(frozen=True)
class Certs:
    """A CA and one certificate for localhost / 127.0.0.1 signed by it, as scripts/certs lays
    them out in ``directory``."""

    directory: Path

    @property
    def ca(self) -> str:
        return str(self.directory / "ca.pem")

    @property
    def cert(self) -> str:
        return str(self.directory / "cert.pem")

    @property
    def key(self) -> str:
        return str(self.directory / "key.pem")

    @property
    def keystore(self) -> str:
        """The certificate and key as PKCS#12, for Java (Kafka)."""
        return str(self.directory / "keystore.p12")

    @property
    def keystore_password(self) -> str:
        return (self.directory / "keystore.password").read_text().strip()

    def client(self, *, with_cert: bool = True) -> ClientTls:
        return ClientTls(self.ca, self.cert if with_cert else "", self.key if with_cert else "")

    def server(self, client_ca: str = "") -> ServerTls:
        return ServerTls(self.cert, self.key, client_ca)

    def env(self) -> dict[str, str]:
        """Service settings for these files (DUETIME_TLS_*)."""
        return {
            "DUETIME_TLS_CA_FILE": self.ca,
            "DUETIME_TLS_CERT_FILE": self.cert,
            "DUETIME_TLS_KEY_FILE": self.key,
        }


async def make_certs(directory: Path, *, renew: bool = False) -> Certs:
    """A new CA and certificate in ``directory`` (an existing CA is kept); ``renew``: a new
    certificate (new key and serial) from the CA already there."""
    args = [str(REPO / "scripts" / "certs"), str(directory), *(["--renew"] if renew else [])]
    process = await asyncio.create_subprocess_exec(
        *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await process.communicate()
    assert process.returncode == 0, out.decode(errors="replace")
    return Certs(directory)


def stack_certs() -> Certs | None:
    """The stack's certificates, as the environment names them (``scripts/stack env``); None
    when it names none (everything plaintext)."""
    ca = os.environ.get("DUETIME_TLS_CA_FILE")
    if not ca:
        return None
    certs = Certs(Path(ca).parent)
    assert os.environ.get("DUETIME_TLS_CERT_FILE") == certs.cert, "not scripts/certs' layout"
    return certs


def service_client_tls(settings: Mapping[str, str] = {}) -> ClientTls | None:
    """How the services' own settings (``settings`` over the environment, ``scripts/stack
    env``) reach a Duetime gRPC server: None when DUETIME_PLAINTEXT says grpc."""
    env = EnvReader({**os.environ, **settings})
    tls = read_tls(env, serves=False, connects=[Link.GRPC]).client(Link.GRPC)
    env.finish()
    return tls


def service_channel(address: str, settings: Mapping[str, str] = {}) -> aio.Channel:
    """A channel to a service process started with ``settings`` over the environment's."""
    tls = service_client_tls(settings)
    if tls is None:
        return aio.insecure_channel(address)
    return aio.secure_channel(address, channel_credentials(tls))


def grpcurl_tls_args() -> list[str]:
    """grpcurl's options for reaching a service as ``service_channel`` does."""
    tls = service_client_tls()
    if tls is None:
        return ["-plaintext"]
    return ["-cacert", tls.ca_file]


def also_plaintext(*links: str) -> dict[str, str]:
    """DUETIME_PLAINTEXT naming ``links`` besides what the environment names already (for a
    test whose client speaks no TLS)."""
    named = {p.strip() for p in os.environ.get("DUETIME_PLAINTEXT", "").split(",") if p.strip()}
    return {"DUETIME_PLAINTEXT": ",".join(sorted(named | set(links)))}


def with_stack_tls(env: Mapping[str, str]) -> dict[str, str]:
    """A service's settings (``env``, over the environment's) with etcd and Kafka moved to the
    stack's TLS ports wherever they are the stack's servers and it serves TLS for them
    (``DUETIME_STACK_*`` from ``scripts/stack env``); any other server (a test's own, given in
    ``env`` or the environment) is left as it is, plaintext. So nothing is plaintext but what
    the stack cannot serve over TLS and the test's own servers."""
    merged = {**os.environ, **env}
    plaintext = {p.strip() for p in merged.get("DUETIME_PLAINTEXT", "").split(",") if p.strip()}
    result = dict(env)
    for link, setting, stack in (
        ("etcd", "DUETIME_ETCD_ENDPOINT", "DUETIME_STACK_ETCD"),
        ("kafka", "DUETIME_KAFKA_BOOTSTRAP", "DUETIME_STACK_KAFKA"),
    ):
        suffix = setting.rsplit("_", 1)[1]
        tls = os.environ.get(f"{stack}_TLS_{suffix}")
        if tls and merged.get(setting) in (tls, os.environ.get(f"{stack}_{suffix}")):
            result[setting] = tls
            plaintext.discard(link)
        elif tls:
            plaintext.add(link)
    result["DUETIME_PLAINTEXT"] = ",".join(sorted(plaintext))
    return result


async def certificate_served(port: int, ca: str) -> bytes:
    """The certificate (DER) a fresh TLS handshake gets, verified with ``ca``."""
    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["h2"])
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    try:
        der: bytes = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        return der
    finally:
        writer.close()
        # The server's HTTP/2 preface may follow our close_notify: not this test's business.
        with contextlib.suppress(ssl.SSLError, OSError):
            await writer.wait_closed()


def certificate_in(path: Path) -> bytes:
    return ssl.PEM_cert_to_DER_cert(path.read_text())
