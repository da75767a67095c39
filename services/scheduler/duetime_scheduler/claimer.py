"""The claim loop: for the partitions this scheduler owns, dispatch what waits and claim due
jobs as they come due.

Polls every ``claim_poll_interval`` with a look-ahead (default 10 s) so the runs of the :00 spike
are queued before their second arrives, grown for a herd as far as its size needs (up to
``claim_horizon``: ``duetime_core.lookahead``, measured once a second), and wakes at once when
partitions are gained. A newly owned partition's fencing token is raised in the store before
its first claim, and recorded with this scheduler's id: its runs refer to it as their claim
proof. Each pass first releases held runs and due retries (older work first, within the teams'
quotas and the dispatch credit), then claims, then the owner's other duties (expired leases,
maintenance).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeAlias

import asyncpg

from duetime_core.lookahead import SteadyFlow, herd_lookahead
from duetime_infra.etcd.partitions import PartitionLeases
from duetime_infra.pg.dispatch.admission import DispatchCredit
from duetime_infra.pg.dispatch.claims import ClaimAbandoned, claim_batch, due_by_second
from duetime_infra.pg.dispatch.dispatcher import release_held_runs, requeue_due_retries
from duetime_infra.pg.dispatch.spec_cache import SpecCache
from duetime_infra.pg.fencing import FencingLost, FencingToken, fence, record_tokens
from duetime_infra.pg.pool import Conn
from duetime_scheduler.config import Settings

log = logging.getLogger(__name__)

# Claim batches per pass before the owner's other duties get their turn.
MAX_BATCHES_PER_PASS = 20
# Runs per release or requeue transaction, and such transactions per pass.
DISPATCH_BATCH = 500
MAX_DISPATCH_BATCHES = 10
# How often the jobs due within the horizon are counted again to size the look-ahead.
LOOKAHEAD_EVERY = 1.0

# Work the partition owner does besides claiming (retries due, expired leases), given the
# fenced tokens of the partitions it owns.
OwnerTask: TypeAlias = (
    "Callable[[asyncpg.Pool[asyncpg.Record], Sequence[FencingToken]], Awaitable[int]]"
)


def owned_tokens(leases: PartitionLeases) -> dict[int, FencingToken]:
    return {p: FencingToken(t.partition, t.epoch, t.revision) for p, t in leases.owned().items()}


class Claimer:
    def __init__(
        self,
        pool: asyncpg.Pool[asyncpg.Record],
        leases: PartitionLeases,
        settings: Settings,
        owner_tasks: Sequence[OwnerTask] = (),
        specs: SpecCache | None = None,
    ) -> None:
        self._pool = pool
        self._leases = leases
        self._settings = settings
        self._owner_tasks = list(owner_tasks)
        self._fenced: dict[int, FencingToken] = {}
        # The ids of the fenced tokens in claim_tokens: each run's claim proof.
        self._token_ids: dict[int, int] = {}
        self._specs = specs or SpecCache()
        self.credit = DispatchCredit(settings.dispatch_credit, settings.claim_lookahead)
        self.claimed_runs = 0
        # The look-ahead in force (grown for a herd), and when to size it again.
        self.lookahead = settings.claim_lookahead
        self._sized_at = -LOOKAHEAD_EVERY
        # The runs claimed by their effective second, the steady flow the sizing allows for.
        self._sizing = settings.claim_horizon > settings.claim_lookahead
        self._steady = SteadyFlow()

    def _still_owner(self, tokens: Mapping[int, FencingToken]) -> Callable[[], bool]:
        def check() -> bool:
            if time.monotonic() >= self._leases.claim_deadline():
                return False
            now_owned = self._leases.owned()
            return all(p in now_owned for p in tokens)

        return check

    async def _raise_new_tokens(self, owned: dict[int, FencingToken]) -> dict[int, FencingToken]:
        """Raises the stored token of partitions gained since the last pass; returns the
        partitions safe to claim (those whose token is ours in the store)."""
        self._fenced = {p: t for p, t in self._fenced.items() if owned.get(p) == t}
        self._token_ids = {p: i for p, i in self._token_ids.items() if p in self._fenced}
        new = [t for p, t in owned.items() if p not in self._fenced]
        while new:
            try:
                async with self._pool.acquire() as conn, conn.transaction():
                    ids = await record_tokens(conn, new, self._settings.scheduler_id)
                    await fence(conn, new, operation="raise_token")
            except FencingLost as lost:
                # A newer owner already wrote a higher token: leave those partitions alone and
                # raise the others (the failed transaction raised none of them).
                log.warning(
                    "partitions fenced by a newer owner",
                    extra={"action": "fencing_refused", "partitions": lost.partitions[:20]},
                )
                new = [t for t in new if t.partition not in lost.partitions]
                continue
            self._fenced.update({t.partition: t for t in new})
            self._token_ids.update(ids)
            break
        return dict(self._fenced)

    async def claim_once(self) -> tuple[int, bool]:
        """One pass: claim due jobs of the owned partitions, then the owner's other duties.

        Returns the runs inserted and whether more may be due: a pass stops after
        ``MAX_BATCHES_PER_PASS`` so that retries and lease expiry keep moving during a backlog.
        """
        tokens = await self._raise_new_tokens(self._leases.owned())
        if not tokens:
            return 0, False
        self.credit.new_pass()
        await self._dispatch_waiting(list(tokens.values()))
        claimed = 0
        more = False
        still_owner = self._still_owner(tokens)
        async with self._pool.acquire() as conn:
            await self._size_lookahead(conn, list(tokens))
            for _ in range(MAX_BATCHES_PER_PASS):
                result = await claim_batch(
                    conn,
                    tokens,
                    lookahead=self._settings.claim_lookahead,
                    batch_size=self._settings.claim_batch_size,
                    still_owner=still_owner,
                    claimed_by=self._settings.scheduler_id,
                    token_ids=self._token_ids,
                    specs=self._specs,
                    credit=self.credit,
                    ahead=self.lookahead,
                )
                claimed += result.runs
                if self._sizing:
                    self._steady.add(result.due_seconds)
                more = result.full
                if not more:
                    break
        for task in self._owner_tasks:
            await task(self._pool, list(tokens.values()))
        self.claimed_runs += claimed
        return claimed, more

    async def _size_lookahead(self, conn: Conn, partitions: list[int]) -> None:
        """Grows the look-ahead past its base as far as what is due needs (at most once per
        ``LOOKAHEAD_EVERY``), or lets it shrink back."""
        settings = self._settings
        if not self._sizing:
            return
        if time.monotonic() - self._sized_at < LOOKAHEAD_EVERY:
            return
        self._sized_at = time.monotonic()
        now, counts = await due_by_second(conn, partitions, settings.claim_horizon)
        base_s = int(settings.claim_lookahead.total_seconds())
        steady = self._steady.per_second(int(now.timestamp()), base_s - 1)
        sized = herd_lookahead(
            counts,
            base=settings.claim_lookahead,
            horizon=settings.claim_horizon,
            rate=settings.claim_rate,
            steady=steady,
        )
        if sized != self.lookahead:
            log.info(
                "claim look-ahead changed",
                extra={
                    "action": "claim_lookahead",
                    "seconds": sized.total_seconds(),
                    "due": sum(n for _, n in counts),
                    "steady_per_second": steady,
                },
            )
        self.lookahead = sized

    async def _dispatch_waiting(self, tokens: list[FencingToken]) -> None:
        """Held runs released and due retries queued again, ahead of new claims."""
        lookahead = self._settings.claim_lookahead
        for _ in range(MAX_DISPATCH_BATCHES):
            released = await release_held_runs(
                self._pool,
                tokens,
                lookahead,
                DISPATCH_BATCH,
                credit=self.credit,
                specs=self._specs,
            )
            if released < DISPATCH_BATCH:
                break
        for _ in range(MAX_DISPATCH_BATCHES):
            requeued = await requeue_due_retries(
                self._pool, tokens, lookahead, DISPATCH_BATCH, credit=self.credit
            )
            if requeued < DISPATCH_BATCH:
                break

    async def run(self, stopping: asyncio.Event) -> None:
        interval = self._settings.claim_poll_interval.total_seconds()
        changed = self._leases.changed
        while not stopping.is_set():
            changed.clear()
            more = False
            try:
                claimed, more = await self.claim_once()
                if claimed:
                    log.debug("claimed", extra={"action": "runs_claimed", "count": claimed})
            except (FencingLost, ClaimAbandoned) as lost:
                log.warning("claim rolled back: %s", lost, extra={"action": "claim_fenced_out"})
            except Exception:
                # A connection cut under a frozen process, a database restart: log, next pass.
                log.exception("claim pass failed", extra={"action": "claim_failed"})
            if more:
                continue
            waits = [asyncio.ensure_future(stopping.wait()), asyncio.ensure_future(changed.wait())]
            try:
                await asyncio.wait(waits, timeout=interval, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waits:
                    w.cancel()


async def hand_over(
    leases: PartitionLeases,
    stopping: asyncio.Event,
    claiming: asyncio.Task[None] | None,
    grace: float,
) -> None:
    """A graceful stop: claiming ends and the partitions go back at once, the lease revoked so
    the other schedulers (watching the keys) take them now rather than at its expiry; then the
    pass in flight is waited for, ``grace`` seconds at most. Handing back first is safe: a claim
    still in flight finds itself no longer owner before COMMIT and rolls back, and the new
    owners' fencing tokens refuse whatever got past that check."""
    stopping.set()
    await leases.stop()
    if claiming is not None:
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(claiming, timeout=grace)
