"""Partition ownership in etcd: register, keep the lease alive, hold a fair share.

A ``PartitionLeases`` registers its scheduler under its own lease, acquires partition keys
with create-if-absent transactions bound to that lease, and moves towards its share of the
partitions (``duetime_core.partitions.member_target``) whenever members or partitions change
(a watch on the prefix) and at least every ``recheck_interval`` in case the watch broke.

Ownership is only ever reported while the lease is safely valid (see ``keepalive``): when a
refresh fails, times out or finds the lease gone, or the validity instant passes, every
partition is dropped at once and subscribers hear about it; then a new lease is granted and
partitions are acquired again, with new create_revisions and so new fencing tokens.

Tasks: the session loop (grant, register, keep alive, start over after a loss), the balance
loop (one pass per wake-up: read the prefix, drop what vanished, release extras, acquire free
keys) and the watch loop (wakes the balancer; pokes the keeper when our keys disappear).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable
from contextlib import aclosing, suppress
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import TypeVar

from duetime_core.jobspec import PARTITIONS
from duetime_core.partitions import (
    Moves,
    PartitionToken,
    member_target,
    plan_moves,
    preference_order,
)
from duetime_infra.etcd.gateway import EtcdGateway, EtcdUnavailable, KeyEvent
from duetime_infra.etcd.keepalive import LeaseKeeper, etcd_backoff, wait_event
from duetime_infra.etcd.membership import KeyLayout, Ownership
from duetime_infra.telemetry import instruments
from duetime_infra.tls import ClientTls

log = logging.getLogger(__name__)

T = TypeVar("T")

# The smallest TTL etcd 3.4 grants with its default election timeout is about 2 s.
MIN_TTL = 2


@dataclass(frozen=True)
class OwnershipChange:
    """Partitions gained or lost in one step, and why (``acquired``, ``released``,
    ``adopted``, ``key_vanished``, or the reason the lease was lost)."""

    gained: frozenset[int]
    lost: frozenset[int]
    reason: str


Subscriber = Callable[[OwnershipChange], None]


class PartitionLeases:
    """The partitions one scheduler owns, kept in etcd.

    ``owned()`` and ``claim_deadline()`` are what a claimer consults: right before COMMIT it
    checks that the partition is still in ``owned()`` and that ``time.monotonic()`` is before
    ``claim_deadline()``; the store's fencing-token check covers the rest.
    """

    def __init__(
        self,
        endpoint: str,
        scheduler_id: str,
        *,
        ttl: float = 10.0,
        epoch: int = 0,
        prefix: str = "/duetime/",
        safety_margin: float = 2.0,
        refresh_interval: float | None = None,
        refresh_timeout: float | None = None,
        request_timeout: float | None = None,
        recheck_interval: float = 1.0,
        partitions: int = PARTITIONS,
        max_in_flight: int = 64,
        tls: ClientTls | None = None,
    ) -> None:
        ttl_s = math.ceil(ttl)
        interval = ttl_s / 3 if refresh_interval is None else refresh_interval
        timeout = interval * 0.75 if refresh_timeout is None else refresh_timeout
        problems = []
        if ttl_s < MIN_TTL:
            problems.append(f"ttl must be at least {MIN_TTL}s, got {ttl}")
        if epoch < 0:
            problems.append(f"epoch must not be negative, got {epoch}")
        if safety_margin < 0:
            problems.append(f"safety_margin must not be negative, got {safety_margin}")
        if not 0 < timeout < interval:
            problems.append(f"refresh_timeout ({timeout}) must be in (0, {interval})")
        if interval + timeout + safety_margin >= ttl_s:
            problems.append(
                f"refresh_interval + refresh_timeout + safety_margin "
                f"({interval} + {timeout} + {safety_margin}) must be below the ttl ({ttl_s})"
            )
        if recheck_interval <= 0 or max_in_flight < 1 or partitions < 1:
            problems.append("recheck_interval, max_in_flight and partitions must be positive")
        if problems:
            raise ValueError("; ".join(problems))

        self._layout = KeyLayout(prefix, partitions)
        self._member_key = self._layout.member_key(scheduler_id)
        self._id = scheduler_id
        self._id_bytes = scheduler_id.encode()
        self._epoch = epoch
        self._recheck = recheck_interval
        self._max_in_flight = max_in_flight
        self._request_timeout = interval if request_timeout is None else request_timeout
        self._order = preference_order(scheduler_id, partitions)
        self._gateway = EtcdGateway(endpoint, request_timeout=self._request_timeout, tls=tls)
        self._keeper = LeaseKeeper(
            self._gateway,
            ttl=ttl_s,
            safety_margin=safety_margin,
            refresh_interval=interval,
            refresh_timeout=timeout,
            on_lost=self._on_lease_lost,
        )
        self._owned: dict[int, PartitionToken] = {}
        self._target = 0
        self._changed = asyncio.Event()
        self._subscribers: list[Subscriber] = []
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._stopped = False

    # -- public API -----------------------------------------------------------------------

    @property
    def scheduler_id(self) -> str:
        return self._id

    async def start(self) -> None:
        """Connects, grants the lease, registers, and starts the background tasks.

        Raises ``EtcdUnavailable`` if etcd cannot be reached to open the first session.
        """
        if self._tasks or self._stopped:
            raise RuntimeError("PartitionLeases can be started once")
        try:
            await self._gateway.connect()
            await self._open_session()
        except BaseException:
            await self._gateway.close()
            raise
        instruments.partitions_changed(self._id, 0, 0, "started")
        self._tasks = [
            asyncio.create_task(self._session_loop(), name=f"partition-session-{self._id}"),
            asyncio.create_task(self._balance_loop(), name=f"partition-balance-{self._id}"),
            asyncio.create_task(self._watch_loop(), name=f"partition-watch-{self._id}"),
        ]

    async def stop(self) -> None:
        """Drops every partition, revokes the lease (which deletes the member key and every
        partition key at one revision, so the others rebalance at once), and closes."""
        if self._stopped:
            return
        self._stopped = True
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            # The loops also check _stopped, in case a library swallowed the cancellation.
            _done, pending = await asyncio.wait(self._tasks, timeout=self._request_timeout + 1)
            if pending:
                log.warning(
                    "partition tasks did not stop in time",
                    extra={"action": "partition_tasks_stuck", "count": len(pending)},
                )
        dropped = frozenset(self._owned)
        self._owned.clear()
        if dropped:
            log.info(
                "partitions handed back",
                extra={"action": "partitions_released", "count": len(dropped), "owned": 0},
            )
            self._notify(OwnershipChange(frozenset(), dropped, "stopping"))
        lease_id = self._keeper.lose("stopping", planned=True)
        if lease_id is not None:
            try:
                await self._gateway.revoke_lease(lease_id)
            except EtcdUnavailable as exc:
                log.warning(
                    "could not revoke the lease; its keys expire with its TTL",
                    extra={"action": "lease_revoke_failed", "error": exc.message},
                )
        await self._gateway.close()
        log.info("partition leases stopped", extra={"action": "partition_leases_stopped"})

    def owned(self) -> dict[int, PartitionToken]:
        """The partitions owned now with their tokens; ``{}`` unless the lease is safely
        valid at this very moment (checked on every call, not only when the keeper runs)."""
        if not self._keeper.is_valid():
            return {}
        return dict(self._owned)

    def claim_deadline(self) -> float:
        """Monotonic time until which claims are safe; 0.0 without a safely valid lease."""
        return self._keeper.valid_until if self._keeper.is_valid() else 0.0

    @property
    def changed(self) -> asyncio.Event:
        """Set on every gain or loss; a single consumer clears it before reading ``owned()``."""
        return self._changed

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Calls ``callback`` synchronously on every change (gains and losses); returns a
        function that unsubscribes. A loss is delivered before anything is re-acquired."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            with suppress(ValueError):
                self._subscribers.remove(callback)

        return unsubscribe

    # -- session: lease + registration ----------------------------------------------------

    async def _open_session(self) -> None:
        grant = await self._keeper.grant()
        try:
            await self._gateway.put(self._member_key, self._id_bytes, lease_id=grant.lease_id)
        except EtcdUnavailable:
            await self._revoke_quietly(self._keeper.lose("could not register the scheduler"))
            raise
        log.info(
            "scheduler registered",
            extra={
                "action": "scheduler_registered",
                "scheduler_id": self._id,
                "lease_id": grant.lease_id,
                "ttl": grant.ttl,
                "prefix": self._layout.root,
            },
        )
        self._wake.set()

    async def _session_loop(self) -> None:
        backoff = etcd_backoff()
        while not self._stopped:
            try:
                if self._keeper.lease_id is None:
                    await self._open_session()
                    backoff.reset()
                lost = await self._keeper.keep_alive()
                # The old lease may still live on the server (a refresh timed out): revoke it
                # so its partitions are free for others now rather than at its expiry.
                await self._revoke_quietly(lost)
            except EtcdUnavailable as exc:
                delay = backoff.next()
                log.warning(
                    "cannot open an etcd session; retrying",
                    extra={"action": "session_retry", "error": exc.message, "delay": delay},
                )
                await asyncio.sleep(delay)
            except Exception:
                log.exception("partition session failed", extra={"action": "session_failed"})
                await self._revoke_quietly(self._keeper.lose("internal error"))
                await asyncio.sleep(backoff.next())

    def _on_lease_lost(self, reason: str) -> None:
        lost = frozenset(self._owned)
        self._owned.clear()
        self._wake.set()
        if lost:
            log.warning(
                "all partitions lost",
                extra={"action": "partitions_lost", "count": len(lost), "reason": reason},
            )
            self._notify(OwnershipChange(gained=frozenset(), lost=lost, reason=reason))

    async def _revoke_quietly(self, lease_id: int | None) -> None:
        if lease_id is None:
            return
        try:
            await self._gateway.revoke_lease(lease_id, limit=min(self._request_timeout, 1.0))
        except EtcdUnavailable as exc:
            log.info(
                "old lease not revoked",
                extra={
                    "action": "lease_revoke_skipped",
                    "lease_id": lease_id,
                    "error": exc.message,
                },
            )

    # -- balancing ------------------------------------------------------------------------

    async def _balance_loop(self) -> None:
        backoff = etcd_backoff()
        last_pass = 0.0
        while not self._stopped:
            await wait_event(self._wake, self._recheck)
            # Coalesce a burst of watch events (a lease expiry deletes hundreds of keys).
            await asyncio.sleep(max(0.0, last_pass + 0.05 - time.monotonic()))
            self._wake.clear()
            if not self._keeper.is_valid():
                continue
            last_pass = time.monotonic()
            try:
                await self._balance_once()
                backoff.reset()
            except EtcdUnavailable as exc:
                delay = backoff.next()
                log.warning(
                    "partition balancing failed; retrying",
                    extra={"action": "balance_retry", "error": exc.message, "delay": delay},
                )
                await asyncio.sleep(delay)
            except Exception:
                log.exception("partition balancing failed", extra={"action": "balance_failed"})
                await asyncio.sleep(backoff.next())

    async def _balance_once(self) -> None:
        generation = self._keeper.generation
        lease_id = self._keeper.lease_id
        if lease_id is None:
            return
        view = self._layout.ownership(await self._gateway.range_prefix(self._layout.root))
        if not self._current(generation):
            return
        members = view.members
        if self._id not in members:
            # Our member key vanished while the lease seemed valid: it may be revoked.
            self._keeper.poke()
            await self._gateway.put(self._member_key, self._id_bytes, lease_id=lease_id)
            log.warning("scheduler re-registered", extra={"action": "scheduler_reregistered"})
            members = members | {self._id}
        self._reconcile(view, lease_id)
        self._target = member_target(self._layout.partitions, members, self._id)
        free = set(range(self._layout.partitions)) - view.holders.keys()
        moves = plan_moves(self._owned.keys(), free, self._target, self._order)
        if moves.release:
            await self._release(moves.release, len(members))
        if moves.need and moves.candidates:
            await self._acquire(moves, lease_id, generation, len(members))

    def _current(self, generation: int) -> bool:
        return self._keeper.generation == generation and self._keeper.is_valid()

    def _reconcile(self, view: Ownership, lease_id: int) -> None:
        """Drops partitions whose key vanished or was re-created; adopts keys our lease holds
        that we did not know about (a create whose reply was lost, a release that failed)."""
        vanished = frozenset(
            partition
            for partition, token in self._owned.items()
            if token.revision <= view.revision
            and (
                (record := view.holders.get(partition)) is None
                or record.create_revision != token.revision
            )
        )
        adopted = {
            partition: PartitionToken(partition, self._epoch, record.create_revision)
            for partition, record in view.holders.items()
            if partition not in self._owned
            and record.lease_id == lease_id
            and record.value == self._id_bytes
        }
        for partition in vanished:
            del self._owned[partition]
        if vanished:
            self._keeper.poke()
            log.warning(
                "partition keys vanished",
                extra={"action": "partitions_lost", "count": len(vanished), "reason": "vanished"},
            )
            self._notify(OwnershipChange(frozenset(), vanished, "key_vanished"))
        if adopted:
            self._owned.update(adopted)
            log.info(
                "partition keys adopted",
                extra={"action": "partitions_adopted", "count": len(adopted)},
            )
            self._notify(OwnershipChange(frozenset(adopted), frozenset(), "adopted"))

    async def _release(self, partitions: tuple[int, ...], members: int) -> None:
        # Stop claiming first, then delete: a claim racing the delete is fenced by the store.
        tokens = [self._owned.pop(partition) for partition in partitions]
        self._notify(OwnershipChange(frozenset(), frozenset(partitions), "released"))
        results = await self._bounded(
            [
                partial(
                    self._gateway.delete_if_created,
                    self._layout.partition_key(token.partition),
                    token.revision,
                )
                for token in tokens
            ]
        )
        released = sum(1 for result in results if result is True)
        log.info(
            "partitions released",
            extra={
                "action": "partitions_released",
                "count": released,
                "owned": len(self._owned),
                "target": self._target,
                "members": members,
            },
        )
        # A key whose delete failed is still under our lease: the next pass adopts it again.
        self._raise_first(results)

    async def _acquire(self, moves: Moves, lease_id: int, generation: int, members: int) -> None:
        need = moves.need
        candidates = iter(moves.candidates)
        acquired = 0
        results: list[int | BaseException | None] = []
        while need > 0:
            batch = list(islice(candidates, need))
            if not batch:
                break
            results = await self._bounded(
                [
                    partial(
                        self._gateway.create_if_absent,
                        self._layout.partition_key(partition),
                        self._id_bytes,
                        lease_id=lease_id,
                    )
                    for partition in batch
                ]
            )
            if not self._current(generation):
                return  # the lease was lost meanwhile: those keys go with it
            wave = {
                partition: PartitionToken(partition, self._epoch, revision)
                for partition, revision in zip(batch, results, strict=True)
                if isinstance(revision, int)
            }
            if wave:
                self._owned.update(wave)
                self._notify(OwnershipChange(frozenset(wave), frozenset(), "acquired"))
            acquired += len(wave)
            need -= len(wave)
            if any(isinstance(result, BaseException) for result in results):
                break
        if acquired:
            log.info(
                "partitions acquired",
                extra={
                    "action": "partitions_acquired",
                    "count": acquired,
                    "owned": len(self._owned),
                    "target": self._target,
                    "members": members,
                },
            )
        self._raise_first(results)

    async def _bounded(
        self, calls: Iterable[Callable[[], Awaitable[T]]]
    ) -> list[T | BaseException]:
        """Runs the calls with at most ``max_in_flight`` at once; errors are returned."""
        gate = asyncio.Semaphore(self._max_in_flight)

        async def one(call: Callable[[], Awaitable[T]]) -> T:
            async with gate:
                return await call()

        return await asyncio.gather(*(one(call) for call in calls), return_exceptions=True)

    @staticmethod
    def _raise_first(results: Iterable[object]) -> None:
        for result in results:
            if isinstance(result, BaseException):
                raise result

    # -- watching -------------------------------------------------------------------------

    async def _watch_loop(self) -> None:
        backoff = etcd_backoff()
        while not self._stopped:
            try:
                async with aclosing(self._gateway.watch_prefix(self._layout.root)) as events:
                    async for event in events:
                        backoff.reset()
                        self._on_event(event)
            except EtcdUnavailable as exc:
                log.warning(
                    "etcd watch broke; re-creating it",
                    extra={"action": "watch_retry", "error": exc.message},
                )
            except Exception:
                log.exception("etcd watch failed", extra={"action": "watch_failed"})
            # Whatever happened while not watching, the next pass reads it.
            self._wake.set()
            await asyncio.sleep(backoff.next())

    def _on_event(self, event: KeyEvent) -> None:
        self._wake.set()
        if not event.deleted:
            return
        partition = self._layout.partition_of(event.key)
        token = None if partition is None else self._owned.get(partition)
        # One of our keys deleted, not by us (we drop a key before deleting it): the lease
        # may have been revoked. Refresh now; the next pass drops single vanished keys.
        if (token is not None and event.revision > token.revision) or (
            event.key == self._member_key
        ):
            self._keeper.poke()

    def _notify(self, change: OwnershipChange) -> None:
        self._changed.set()
        instruments.partitions_changed(self._id, len(self._owned), len(change.lost), change.reason)
        for callback in list(self._subscribers):
            try:
                callback(change)
            except Exception:
                log.exception("partition subscriber failed", extra={"action": "subscriber_failed"})
