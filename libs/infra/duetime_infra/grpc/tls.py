"""gRPC over TLS: server credentials that follow their files, and client credentials.

A server's certificate and key (and the CA of the client certificates it requires) are read
again when one of the files changes: gRPC asks ``CertificateFiles.fetch`` at each new
connection's handshake (its dynamic server credentials), and a changed file costs one read and
a check that the certificate and key match; an unchanged one, a ``stat`` of each file. A
half-written or mismatched pair is not served: the previous one stays until the files are whole
again. Connections already open keep the certificate they were made with.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading

import grpc

from duetime_infra.tls import ClientTls, ServerTls, read_bytes

log = logging.getLogger(__name__)

_Stamp = tuple[tuple[int, int, int], ...]


class CertificateFiles:
    """A server's certificate configuration, from files, following their changes."""

    def __init__(self, tls: ServerTls) -> None:
        self._tls = tls
        self._paths = [p for p in (tls.cert_file, tls.key_file, tls.client_ca_file) if p]
        self._lock = threading.Lock()
        self._stamp = self._stamps()
        self.initial = self._configuration()

    def _stamps(self) -> _Stamp:
        stats = [os.stat(path) for path in self._paths]
        return tuple((s.st_mtime_ns, s.st_size, s.st_ino) for s in stats)

    def _configuration(self) -> grpc.ServerCertificateConfiguration:
        tls = self._tls
        contents = [read_bytes(path) for path in self._paths]
        # Checked before it is served (gRPC would take a key that does not match), and read
        # again: files still being written are served at a later handshake.
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(tls.cert_file, tls.key_file)
        if contents != [read_bytes(path) for path in self._paths]:
            raise OSError("the certificate files changed while they were read")
        cert, key, *client_ca = contents
        return grpc.ssl_server_certificate_configuration(
            [(key, cert)], root_certificates=client_ca[0] if client_ca else None
        )

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """The new configuration when a file changed since the last one served, else None.
        Called by gRPC on its own threads, at each handshake."""
        try:
            stamp = self._stamps()
            if stamp == self._stamp:
                return None
            with self._lock:
                if stamp == self._stamp:
                    return None
                configuration = self._configuration()
                self._stamp = stamp
        except (OSError, ssl.SSLError) as error:
            # Not recorded as seen: the next handshake tries again, the old pair serving.
            log.warning(
                "server certificate files changed but cannot be served; keeping the old ones",
                extra={"action": "certificate_reload_failed", "error": str(error)},
            )
            return None
        log.info(
            "server certificate reloaded",
            extra={"action": "certificate_reloaded", "cert_file": self._tls.cert_file},
        )
        return configuration


def server_credentials(tls: ServerTls | None) -> grpc.ServerCredentials | None:
    """Credentials serving ``tls``'s files as they change; client certificates signed by its
    client CA are required when it names one. None (plaintext) for None."""
    if tls is None:
        return None
    files = CertificateFiles(tls)
    return grpc.dynamic_ssl_server_credentials(
        files.initial,
        files.fetch,  # type: ignore[arg-type]  # None means "no change", as gRPC documents
        require_client_authentication=bool(tls.client_ca_file),
    )


def channel_credentials(tls: ClientTls) -> grpc.ChannelCredentials:
    """Verifies the server with the CA; presents this process's certificate when it has one."""
    ca, key, cert = tls.read()
    return grpc.ssl_channel_credentials(ca, key, cert)
