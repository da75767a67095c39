"""One etcd lease kept alive, and the time until which it is safe to act under it.

aetcd has no background keepalive: ``LeaseKeeper.keep_alive`` refreshes about every TTL/3,
each refresh bounded by a timeout shorter than that. The lease is *safely valid* until

    (monotonic time the last successful refresh was SENT) + (TTL the server granted) - margin.

The server measures its TTL from when it received the refresh, which is after we sent it, so
the lease cannot expire on the server before that instant; the margin covers clock-rate error
and a database statement still running at the deadline. A failed or timed-out refresh, a TTL
of 0 or less (lease gone), or that instant passing: the lease is lost, at once.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable

from duetime_core.backoff import DoublingBackoff
from duetime_infra.etcd.gateway import EtcdGateway, EtcdUnavailable, LeaseGrant

log = logging.getLogger(__name__)


async def wait_event(event: asyncio.Event, seconds: float) -> bool:
    """Waits until ``event`` is set or ``seconds`` pass; True if it was set.

    Not ``asyncio.wait_for``: on Python 3.11 it can swallow a cancellation that arrives just
    as the event is set, and a loop cancelled that way never stops.
    """
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True


def etcd_backoff() -> DoublingBackoff:
    """Delays for the etcd retry loops (session, balancing, watch): 0.1 s doubling to 2 s,
    jittered."""
    return DoublingBackoff(0.1, 2.0, random.random)


class LeaseKeeper:
    def __init__(
        self,
        gateway: EtcdGateway,
        *,
        ttl: int,
        safety_margin: float,
        refresh_interval: float,
        refresh_timeout: float,
        on_lost: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._gateway = gateway
        self._ttl = ttl
        self._margin = safety_margin
        self._interval = refresh_interval
        self._refresh_timeout = refresh_timeout
        self._on_lost = on_lost
        self._clock = clock
        self._lease: LeaseGrant | None = None
        self._valid_until = 0.0
        self._last_sent = 0.0
        self._generation = 0
        self._poke = asyncio.Event()

    @property
    def lease_id(self) -> int | None:
        """The lease held now (valid or not yet noticed as lost), None between leases."""
        return None if self._lease is None else self._lease.lease_id

    @property
    def generation(self) -> int:
        """Changes whenever a lease is granted or lost: work started under one generation
        must not be recorded under another."""
        return self._generation

    @property
    def last_refresh_sent(self) -> float:
        """Monotonic time the last successful grant or refresh request was sent."""
        return self._last_sent

    @property
    def valid_until(self) -> float:
        """Monotonic time until which the lease is safely valid; 0 without a lease."""
        return self._valid_until if self._lease is not None else 0.0

    def is_valid(self) -> bool:
        return self._lease is not None and self._clock() < self._valid_until

    async def grant(self) -> LeaseGrant:
        """Grants a new lease (the previous one must be lost or never granted)."""
        sent = self._clock()
        grant = await self._gateway.grant_lease(self._ttl)
        if grant.ttl <= self._margin:
            raise EtcdUnavailable(f"etcd granted a TTL of {grant.ttl}s, not above the margin")
        self._lease = grant
        self._generation += 1
        self._last_sent = sent
        self._valid_until = sent + grant.ttl - self._margin
        log.info(
            "etcd lease granted",
            extra={"action": "lease_granted", "lease_id": grant.lease_id, "ttl": grant.ttl},
        )
        return grant

    def poke(self) -> None:
        """Refresh now rather than at the next interval (a sign the lease may be gone)."""
        self._poke.set()

    async def keep_alive(self) -> int | None:
        """Refreshes the current lease until it is lost; returns the lost lease's id."""
        lease = self._lease
        if lease is None:
            return None
        while True:
            delay = min(self._last_sent + self._interval, self._valid_until) - self._clock()
            if delay > 0:
                await wait_event(self._poke, delay)
            self._poke.clear()
            if self._lease is not lease:  # lost meanwhile (stop)
                return None
            sent = self._clock()
            if sent >= self._valid_until:
                return self.lose("lease validity passed before it could be refreshed")
            try:
                ttl = await self._gateway.refresh_lease(
                    lease.lease_id,
                    limit=min(self._refresh_timeout, self._valid_until - sent),
                )
            except EtcdUnavailable as exc:
                return self.lose(f"lease refresh failed: {exc.message}")
            if self._lease is not lease:
                return None
            if ttl <= 0:
                return self.lose("lease expired or was revoked on the server")
            if self._clock() >= self._valid_until:
                return self.lose("lease validity passed while refreshing")
            self._last_sent = sent
            self._valid_until = sent + ttl - self._margin

    def lose(self, reason: str, *, planned: bool = False) -> int | None:
        """Gives the lease up at once (whatever the server thinks); returns its id.

        ``planned``: a clean stop rather than a failure (logged at INFO, not WARNING).
        """
        lease = self._lease
        if lease is None:
            return None
        self._lease = None
        self._valid_until = 0.0
        self._generation += 1
        log.log(
            logging.INFO if planned else logging.WARNING,
            "etcd lease given up" if planned else "etcd lease lost",
            extra={"action": "lease_lost", "lease_id": lease.lease_id, "reason": reason},
        )
        self._on_lost(reason)
        return lease.lease_id
