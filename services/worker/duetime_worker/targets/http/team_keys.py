"""A team's signing keys as the worker keeps them: fetched from the schedulers
(WorkerService.GetSigningKeys, which opens them; never through Kafka) for a run of the team this
worker holds, named in the fetch, and kept for ``KEEP_SECONDS``, so a herd of calls costs one
fetch per team. When a fetch fails, the keys fetched before still sign for a while. The keys
live in this process's memory only: never logged, never in a span or a metric.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import grpc
from grpc import aio

from duetime_core.jobspec import CallSigning
from duetime_infra.signing import SigningKey, SigningKeys

log = logging.getLogger(__name__)

# How long a team's keys are kept: a key added is used, and one retired dropped, within this.
KEEP_SECONDS = 30.0
# How long past their time a team's keys still sign while they cannot be fetched again.
STALE_SECONDS = 300.0
# How long after a failed fetch a team's keys are asked for again.
RETRY_SECONDS = 5.0
# How long a team without a key is kept so: a key added is used by the next call.
NO_KEY_SECONDS = 1.0
# Answers of a fetch that keys fetched before must not override.
_REFUSALS = frozenset((grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.INVALID_ARGUMENT))


@dataclass(frozen=True, slots=True)
class FetchedKeys:
    """A fetch's answer: the team's active keys, and how its jobs' calls are signed when a
    job does not say."""

    keys: tuple[SigningKey, ...]
    default: CallSigning = CallSigning.OFF


# Fetches a team's keys (its first argument) for one of its runs this worker holds (the second);
# the worker's is ``duetime_worker.attempt.scheduler_client.fetch_from``.
Fetch = Callable[[str, str], Awaitable[FetchedKeys]]


@dataclass(frozen=True)
class TeamKeys:
    """What the worker knows of a team's signing: its keys and default, and until when."""

    keys: SigningKeys | None  # None: none to sign with, for the reason below
    default: CallSigning
    until: float  # when to fetch them again
    fetched: float
    missing: str = "its team has no active signing key (AdminService.AddSigningKey)"


# What a worker knows of a team from a scheduler older than signed calls: it signs nothing, and
# a job that asks for signing waits (its call fails, retryably) until the schedulers are new.
def _unserved(now: float, keep: float) -> TeamKeys:
    return TeamKeys(
        None,
        CallSigning.OFF,
        now + keep,
        now,
        "the schedulers do not serve signing keys (an older build)",
    )


class KeyCache:
    """Teams' keys fetched through ``fetch`` and kept for ``keep`` seconds; one fetch per team
    at a time, shared by every call that waits for it."""

    def __init__(
        self,
        fetch: Fetch,
        *,
        keep: float = KEEP_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetch = fetch
        self._keep = keep
        self._clock = clock
        self._teams: dict[str, TeamKeys] = {}
        self._fetching: dict[str, asyncio.Future[TeamKeys]] = {}

    async def get(
        self, team: str, run_id: str, *, fresh: bool, key_ids: tuple[str, ...] | None
    ) -> TeamKeys:
        """The team's keys: as kept, unless ``fresh`` is asked, those kept have expired, or
        ``key_ids`` names a key they lack (one added since: fetched again, for ``run_id``)."""
        known = self._teams.get(team)
        if (
            known is not None
            and not fresh
            and known.until > self._clock()
            and not _lacks(known, key_ids)
        ):
            return known
        return await asyncio.shield(self._fetch_of(team, run_id))

    def warm(self, team: str, run_id: str, within: float) -> None:
        """Fetches a team's keys (for ``run_id``) in the background unless those kept are still
        kept ``within`` seconds from now."""
        known = self._teams.get(team)
        if known is None or known.until <= self._clock() + within:
            self._fetch_of(team, run_id)

    def _fetch_of(self, team: str, run_id: str) -> asyncio.Future[TeamKeys]:
        """The team's fetch under way (for whichever of its runs began it), or one begun now
        for ``run_id``."""
        pending = self._fetching.get(team)
        if pending is None:
            pending = asyncio.ensure_future(self._load(team, run_id))
            self._fetching[team] = pending
            pending.add_done_callback(lambda done: self._fetched(team, done))
        return pending

    def _fetched(self, team: str, done: asyncio.Future[TeamKeys]) -> None:
        self._fetching.pop(team, None)
        if not done.cancelled():
            done.exception()  # a warm-up's failure is the next call's to see (``_stale``)

    async def _load(self, team: str, run_id: str) -> TeamKeys:
        """The team's keys fetched; when the fetch fails, those fetched before (for at most
        ``STALE_SECONDS`` past their time), so a scheduler's hiccup does not stop calls. A
        refusal is not a hiccup: it is the call's to see."""
        try:
            answer = await self._fetch(team, run_id)
        except aio.AioRpcError as error:
            if error.code() == grpc.StatusCode.UNIMPLEMENTED:
                self._teams[team] = _unserved(self._clock(), self._keep)
                return self._teams[team]
            if error.code() in _REFUSALS:
                raise
            return self._stale(team, error)
        except TimeoutError as error:
            return self._stale(team, error)
        keys = answer.keys
        now = self._clock()
        keep = self._keep if keys else min(self._keep, NO_KEY_SECONDS)
        loaded = TeamKeys(SigningKeys(keys) if keys else None, answer.default, now + keep, now)
        self._teams[team] = loaded
        return loaded

    def _stale(self, team: str, error: aio.AioRpcError | TimeoutError) -> TeamKeys:
        known, now = self._teams.get(team), self._clock()
        if known is None or now - known.fetched > STALE_SECONDS:
            raise error
        log.warning(
            "a team's signing keys could not be fetched again; those fetched before sign",
            extra={"action": "signing_keys_stale", "team": team, "why": error_code(error)},
        )
        # Asked again after a while, not by every call meanwhile.
        self._teams[team] = dataclasses.replace(known, until=now + RETRY_SECONDS)
        return known


def _lacks(team: TeamKeys, key_ids: tuple[str, ...] | None) -> bool:
    """Whether ``key_ids`` names a key the team's kept keys do not hold."""
    if not key_ids:
        return False
    held = {key.key_id for key in team.keys.active} if team.keys is not None else set()
    return not held.issuperset(key_ids)


def error_code(error: Exception) -> str:
    """A failed fetch's gRPC status name, for a log or an outcome (never its details)."""
    if isinstance(error, aio.AioRpcError):
        return str(error.code().name)
    return "DEADLINE_EXCEEDED" if isinstance(error, TimeoutError) else type(error).__name__
