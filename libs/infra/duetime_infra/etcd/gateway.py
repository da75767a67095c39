"""The one place aetcd is called: typed results in, driver errors wrapped as they enter.

aetcd 1.0.0 has no type stubs, so its objects stay ``Any`` inside this module and nothing
untyped leaves it. Every call is bounded by a timeout; a gRPC or aetcd error, or a timeout,
becomes ``EtcdUnavailable``. Given TLS settings, the client dials over TLS (verifying etcd with
the CA, presenting this process's certificate for etcd's ``--client-cert-auth``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, TypeVar

import aetcd
import grpc
from aetcd import rpc, watcher

from duetime_core.errors import Unavailable
from duetime_infra.grpc.tls import channel_credentials
from duetime_infra.tls import ClientTls

T = TypeVar("T")


class EtcdUnavailable(Unavailable):
    """etcd did not answer, answered with an error, or took longer than allowed."""

    default_reason = "ETCD_UNAVAILABLE"


@dataclass(frozen=True)
class LeaseGrant:
    lease_id: int
    ttl: int


@dataclass(frozen=True)
class KeyRecord:
    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    lease_id: int


@dataclass(frozen=True)
class RangeSnapshot:
    """Keys under a prefix as of one store revision."""

    revision: int
    records: tuple[KeyRecord, ...]


@dataclass(frozen=True)
class KeyEvent:
    """A watched change. ``revision`` is the revision of the change; etcd sends no
    ``create_revision`` with a delete."""

    key: str
    deleted: bool
    revision: int


def _record(kv: Any) -> KeyRecord:
    return KeyRecord(
        key=bytes(kv.key).decode(),
        value=bytes(kv.value),
        create_revision=int(kv.create_revision),
        mod_revision=int(kv.mod_revision),
        lease_id=int(kv.lease),
    )


def _split_endpoint(endpoint: str) -> tuple[str, int]:
    host, sep, port = endpoint.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"etcd endpoint must be host:port, got {endpoint!r}")
    return host, int(port)


class _TlsClient(aetcd.Client):  # type: ignore[misc]
    """aetcd 1.0.0 always dials in plaintext: this client is aetcd's, but for its channel,
    which is a TLS one (the rest of ``connect`` as aetcd has it, without user/password)."""

    _is_connecting: bool

    def __init__(self, credentials: grpc.ChannelCredentials, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._credentials = credentials

    async def connect(self) -> None:
        if self._connected.is_set():
            return
        if self._is_connecting:
            await asyncio.wait_for(self._connected.wait(), self._connect_wait_timeout)
            return
        try:
            self._is_connecting = True
            target = f"{self._host}:{self._port}"
            self.channel = rpc.secure_channel(
                target, self._credentials, options=self._options.items()
            )
            self.kvstub = rpc.KVStub(self.channel)
            self.clusterstub = rpc.ClusterStub(self.channel)
            self.leasestub = rpc.LeaseStub(self.channel)
            self.maintenancestub = rpc.MaintenanceStub(self.channel)
            self._watcher = watcher.Watcher(
                rpc.WatchStub(self.channel), timeout=self._timeout, metadata=self.metadata
            )
            self._connected.set()
        finally:
            self._is_connecting = False


class EtcdGateway:
    def __init__(
        self, endpoint: str, *, request_timeout: float, tls: ClientTls | None = None
    ) -> None:
        host, port = _split_endpoint(endpoint)
        self._timeout = request_timeout
        # No client-wide deadline: each call below has its own. Watch creation uses it too.
        if tls is None:
            self._client: Any = aetcd.Client(host=host, port=port, timeout=None)
        else:
            self._client = _TlsClient(channel_credentials(tls), host=host, port=port, timeout=None)
        self.endpoint = endpoint

    async def _call(self, what: str, call: Awaitable[T], limit: float | None = None) -> T:
        limit = self._timeout if limit is None else limit
        try:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a
            # cancellation that arrives as the call completes, and a task would not stop.
            async with asyncio.timeout(max(limit, 0.0)):
                return await call
        except TimeoutError as exc:
            raise EtcdUnavailable(
                f"etcd {what} took longer than {limit:.2f}s", reason="ETCD_TIMEOUT"
            ) from exc
        except (aetcd.ClientError, grpc.RpcError) as exc:
            raise EtcdUnavailable(f"etcd {what} failed: {exc}") from exc

    async def connect(self) -> None:
        await self._call("connect", self._client.connect())

    async def close(self) -> None:
        with suppress(aetcd.ClientError, grpc.RpcError, TimeoutError):
            async with asyncio.timeout(self._timeout):
                await self._client.close()

    async def grant_lease(self, ttl: int) -> LeaseGrant:
        lease = await self._call("lease grant", self._client.lease(ttl))
        return LeaseGrant(lease_id=int(lease.id), ttl=int(lease.ttl))

    async def refresh_lease(self, lease_id: int, *, limit: float | None = None) -> int:
        """One keepalive round trip; the TTL the server set, 0 or less if the lease is gone.

        ``limit`` bounds this call (seconds) instead of the gateway's request timeout.
        """
        reply = await self._call("lease refresh", self._client.refresh_lease(lease_id), limit)
        return -1 if reply is None else int(reply.TTL)

    async def revoke_lease(self, lease_id: int, *, limit: float | None = None) -> None:
        await self._call("lease revoke", self._client.revoke_lease(lease_id), limit)

    async def put(self, key: str, value: bytes, *, lease_id: int) -> None:
        await self._call("put", self._client.put(key.encode(), value, lease=lease_id))

    async def create_if_absent(self, key: str, value: bytes, *, lease_id: int) -> int | None:
        """Creates ``key`` bound to the lease unless it exists; its create_revision, or None."""
        ops = self._client.transactions
        raw = key.encode()
        succeeded, responses = await self._call(
            "create-if-absent",
            self._client.transaction(
                compare=[ops.create(raw) == 0],
                success=[ops.put(raw, value, lease=lease_id), ops.get(raw)],
                failure=[],
            ),
        )
        if not succeeded:
            return None
        # The get runs inside the transaction: the key as this very put created it.
        _value, got = responses[1][0]
        return int(got.create_revision)

    async def delete_if_created(self, key: str, create_revision: int) -> bool:
        """Deletes ``key`` only while it is the incarnation created at ``create_revision``."""
        ops = self._client.transactions
        raw = key.encode()
        succeeded, _ = await self._call(
            "delete-if-created",
            self._client.transaction(
                compare=[ops.create(raw) == create_revision],
                success=[ops.delete(raw)],
                failure=[],
            ),
        )
        return bool(succeeded)

    async def range_prefix(self, prefix: str) -> RangeSnapshot:
        result = await self._call("range", self._client.get_prefix(prefix.encode()))
        return RangeSnapshot(
            revision=int(result.header.revision),
            records=tuple(_record(kv) for kv in result.kvs),
        )

    async def get(self, key: str) -> KeyRecord | None:
        result = await self._call("get", self._client.get(key.encode()))
        return None if result is None else _record(result)

    async def watch_prefix(self, prefix: str) -> AsyncGenerator[KeyEvent, None]:
        """Changes under ``prefix`` from now on, until the stream breaks (EtcdUnavailable).

        Use it with ``contextlib.aclosing`` so the server-side watch is cancelled on exit.
        aetcd ends the iteration without an error when the client is closed, and may also
        stay silent if the server ends the stream cleanly: callers re-read periodically.
        """
        watch = await self._call("watch", self._client.watch_prefix(prefix.encode()))
        try:
            iterator = aiter(watch)
            while True:
                try:
                    event = await anext(iterator)
                except StopAsyncIteration:
                    return
                except (aetcd.ClientError, grpc.RpcError) as exc:
                    raise EtcdUnavailable(f"etcd watch broke: {exc}") from exc
                yield KeyEvent(
                    key=bytes(event.kv.key).decode(),
                    deleted=event.kind == aetcd.EventKind.DELETE,
                    revision=int(event.kv.mod_revision),
                )
        finally:
            with suppress(aetcd.ClientError, grpc.RpcError, TimeoutError):
                async with asyncio.timeout(self._timeout):
                    await watch.cancel()
