"""The HTTP targets' hosts as the worker's caller keeps them: reqwest clients pinned to an
address the allow-list allows, the literal-IP checks and each origin's gate.

reqwest resolves names itself, with no hook to filter what it finds, so every host name gets a
client of its own whose only address is one the policy allowed (``resolve(host, address)``):
the worker resolves the name, drops the refused addresses and pins the first left, again once
the pin is RESOLVE_TTL old (one resolution at a time per host, however many calls wait), so a
name that re-resolves to a refused address is never connected to; after a connection to the
pinned address failed, the next allowed one. An IP literal is never
resolved: it is checked once and called through a shared client.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta

from pyreqwest.client import Client, ClientBuilder

from duetime_worker.herd.slots import WeightedSlots
from duetime_worker.targets.http.allow_list import TargetPolicy

# The longest a connection (TCP and TLS) may take by default (DUETIME_HTTP_CONNECT_TIMEOUT):
# the send check asks the lease to outlast it, since from the hand-off to reqwest the first byte
# may leave at any moment until then. Two seconds outlast one lost SYN (resent after 1 s).
CONNECT_TIMEOUT = 2.0
# How long a host's pinned address is used before the host is resolved again.
RESOLVE_TTL = 10.0
# Hosts remembered (pins, literal checks, origins' gates); past this many they start over.
_HOST_MEMORY = 4096

Resolve = Callable[[str], Awaitable[list[str]]]


class TargetRefused(OSError):
    """The allow-list forbids every address of the target's host."""


async def system_resolve(host: str) -> list[str]:
    """The host's addresses by the system resolver (in a thread), in its order."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass
class _Pin:
    """A host name's client, pinned to one address the policy allows, until ``until``;
    ``unreachable`` once a connection to it could not be made."""

    client: Client
    address: str
    until: float
    unreachable: bool = False


@dataclass
class Hosts:
    """Open with ``open()`` (inside the event loop), end with ``close()``."""

    policy: TargetPolicy
    resolve: Resolve = system_resolve
    connect_timeout: float = CONNECT_TIMEOUT
    # Per host: whether it is an IP literal, and the policy's refusal if so. A herd calls the
    # same few hosts thousands of times; each is parsed and checked once.
    literals: dict[str, tuple[bool, str | None]] = field(default_factory=dict)
    pins: dict[str, _Pin] = field(default_factory=dict)
    resolving: dict[str, asyncio.Future[_Pin]] = field(default_factory=dict)
    gates: dict[str, WeightedSlots] = field(default_factory=dict)
    shared: Client | None = None  # for IP literals, which reqwest never resolves

    def open(self) -> None:
        self.shared = self._build()

    async def close(self) -> None:
        clients = [pin.client for pin in self.pins.values()]
        if self.shared is not None:
            clients.append(self.shared)
        self.pins.clear()
        self.shared = None
        for client in clients:
            await client.close()

    def literal_refusal(self, host: str) -> str | None:
        """The policy's refusal of an IP-literal host; None for an allowed literal or a name."""
        known = self.literals.get(host)
        if known is None:
            address = host.removeprefix("[").removesuffix("]")
            literal = _is_ip(address)
            known = (literal, self.policy.refusal(address, address) if literal else None)
            if len(self.literals) >= _HOST_MEMORY:
                self.literals.clear()
            self.literals[host] = known
        return known[1]

    def gate(self, origin: str, limit: int) -> WeightedSlots:
        """The gate of the calls in flight to a scheme, host and port, ``limit`` at once,
        shared by the teams that call it in weighted fair order."""
        gate = self.gates.get(origin)
        if gate is None:
            if len(self.gates) >= _HOST_MEMORY:
                self.gates.clear()  # their calls in flight keep theirs
            gate = self.gates[origin] = WeightedSlots(limit)
        return gate

    def pinned(self, host: str) -> Client | None:
        """The client to call ``host`` with (after ``literal_refusal``) while its pin holds."""
        if self.literals.get(host, (False, None))[0]:
            return self.shared
        pin = self.pins.get(host)
        if pin is not None and asyncio.get_running_loop().time() < pin.until:
            return pin.client
        return None

    async def client(self, host: str) -> Client:
        """The client to call ``host`` with (after ``literal_refusal``): for a name, its
        pinned one, resolved again if need be; raises TargetRefused, or OSError when the name
        does not resolve."""
        assert self.shared is not None, "HttpCaller.start() first"
        known = self.pinned(host)
        if known is not None:
            return known
        pin = self.pins.get(host)
        pending = self.resolving.get(host)
        if pending is None:
            pending = self.resolving[host] = asyncio.ensure_future(self._pin(host, pin))
            pending.add_done_callback(lambda done: self._resolved(host, done))
        # Shielded: a caller that stops waiting (its timeout) leaves the others' resolution.
        return (await asyncio.shield(pending)).client

    def unreachable(self, host: str, client: Client) -> None:
        """No connection to ``host`` could be made through ``client``: its next call resolves
        the name again and pins the next allowed address, as a client trying each would."""
        pin = self.pins.get(host)
        if pin is not None and pin.client is client:
            pin.until = 0.0
            pin.unreachable = True

    def _resolved(self, host: str, done: asyncio.Future[_Pin]) -> None:
        self.resolving.pop(host, None)
        if not done.cancelled():
            done.exception()  # seen, even when every caller stopped waiting

    async def _pin(self, host: str, old: _Pin | None) -> _Pin:
        allowed = await self._allowed(host)
        now = asyncio.get_running_loop().time()
        address = allowed[0]
        if old is not None and old.address in allowed:
            if not old.unreachable:
                old.until = now + RESOLVE_TTL
                return old
            address = allowed[(allowed.index(old.address) + 1) % len(allowed)]
        if len(self.pins) >= _HOST_MEMORY:
            self.pins.clear()  # their calls in flight keep their clients
        pin = self.pins[host] = _Pin(self._build(host, address), address, now + RESOLVE_TTL)
        return pin

    async def _allowed(self, host: str) -> list[str]:
        found = await self.resolve(host)
        allowed = []
        reasons = []
        for address in found:
            reason = self.policy.refusal(host, address)
            if reason is None:
                allowed.append(address)
            else:
                reasons.append(reason)
        if not allowed:
            raise TargetRefused(reasons[0] if reasons else f"{host} did not resolve")
        return allowed

    def _build(self, host: str = "", address: str = "") -> Client:
        """A client that keeps no cookies (it serves every team), follows no redirect, uses no
        proxy from the environment and decompresses nothing; pinned to ``address`` for
        ``host`` when given. It verifies TLS against the system's trust store (SSL_CERT_FILE
        honoured), as Python's ssl did."""
        builder = (
            ClientBuilder()
            .no_proxy()
            .follow_redirects(False)
            .gzip(False)
            .brotli(False)
            .zstd(False)
            .deflate(False)
            .default_cookie_store(False)
            .connect_timeout(timedelta(seconds=self.connect_timeout))
        )
        if host:
            builder = builder.resolve(host, address, 0)
        return builder.build()


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
