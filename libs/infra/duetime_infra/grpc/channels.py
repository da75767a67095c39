"""The gRPC options that make a peer's death or freeze show in seconds: keepalive pings on
every channel to a scheduler, accepted by the servers, and a target that names several
schedulers.

A scheduler that is frozen (SIGSTOP, a hung host) keeps its TCP connections open, so without
pings a worker waits on it until its attempts' leases run out. With a ping every
``KEEPALIVE_SECONDS`` and the connection given up when a ping is not answered within
``KEEPALIVE_TIMEOUT_SECONDS``, the channel moves to the next scheduler of its target.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from grpc import aio

from duetime_infra.grpc.tls import channel_credentials
from duetime_infra.tls import ClientTls

KEEPALIVE_SECONDS = 1.0
KEEPALIVE_TIMEOUT_SECONDS = 1.0

# A client's channel: pings even while idle, quick reconnects, the first reachable address
# (pick_first walks the target's list).
CLIENT_OPTIONS: tuple[tuple[str, int | str], ...] = (
    ("grpc.keepalive_time_ms", int(KEEPALIVE_SECONDS * 1000)),
    ("grpc.keepalive_timeout_ms", int(KEEPALIVE_TIMEOUT_SECONDS * 1000)),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    # Any ping's answer is awaited this long (60 s by default: a bandwidth probe's ping in
    # flight would otherwise stand in for the keepalive and hide a frozen peer for a minute).
    ("grpc.http2.ping_timeout_ms", int(KEEPALIVE_TIMEOUT_SECONDS * 1000)),
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
)
# A server accepts those pings instead of answering them with GOAWAY (too many pings).
SERVER_OPTIONS: tuple[tuple[str, int | str], ...] = (
    # gRPC binds with SO_REUSEPORT unless told not to: a second process given the same port
    # (a stale one, a test's port picked while free) would silently take a share of the
    # connections, and a worker's starts would reach a scheduler of another database.
    ("grpc.so_reuseport", 0),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_ping_interval_without_data_ms", int(KEEPALIVE_SECONDS * 1000) // 2),
    ("grpc.http2.max_ping_strikes", 0),
)


def target_of(addresses: Sequence[str]) -> str:
    """The gRPC target for ``host:port`` addresses: one address as it is (a name resolves to
    all its addresses); several IP literals as an ``ipv4:``/``ipv6:`` list. Raises ValueError
    for several addresses that are not all IP literals of one family (give a name that
    resolves to all of them instead)."""
    if len(addresses) == 1:
        return addresses[0]
    families = set()
    for address in addresses:
        host = address.rpartition(":")[0].strip("[]")
        try:
            families.add(ipaddress.ip_address(host).version)
        except ValueError:
            raise ValueError(
                f"{address!r}: several schedulers must be IP addresses (or one name that "
                "resolves to all of them)"
            ) from None
    if len(families) != 1:
        raise ValueError("several schedulers must all be IPv4 or all IPv6 addresses")
    return f"ipv{families.pop()}:" + ",".join(addresses)


def scheduler_channel(
    addresses: Sequence[str],
    tls: ClientTls | None,
    options: Sequence[tuple[str, int | str]] = (),
) -> aio.Channel:
    """A channel to the schedulers at ``addresses`` (the first reachable one), pinging to notice
    a dead or frozen one; over TLS when ``tls`` is given, the certificates checked against the
    first address's host (every scheduler's certificate names the same service)."""
    target = target_of(addresses)
    every = (*options, *CLIENT_OPTIONS)
    if tls is None:
        return aio.insecure_channel(target, options=every)
    if len(addresses) > 1:
        host = addresses[0].rpartition(":")[0].strip("[]")
        every = (*every, ("grpc.ssl_target_name_override", host))
    return aio.secure_channel(target, channel_credentials(tls), options=every)
