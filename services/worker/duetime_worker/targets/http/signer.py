"""Signing a team's calls (``duetime_infra.signing``): the headers that let a target check that
a call came from Duetime, over the exact body sent.

A team's keys come from the schedulers (WorkerService.GetSigningKeys, which opens them; never
through Kafka) for a run of the team this worker holds, named in the fetch, and are kept for
``KEEP_SECONDS``, so a herd of calls costs one fetch per team and each call only its
signatures; a call is signed only with the keys its start named (``SignedCall.key_ids``). The
keys live in this process's memory only: never logged, never in a span or a metric.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import grpc
from grpc import aio

from duetime.jobs.v1 import job_pb2
from duetime.worker.v1 import worker_service_pb2 as pb
from duetime.worker.v1 import worker_service_pb2_grpc
from duetime_infra.signing import (
    SigningKeys,
    TokenClaims,
    mint_id_token,
    signing_key_from,
    webhook_headers,
)
from duetime_worker.targets.outcome import NOT_BEGUN, Outcome

log = logging.getLogger(__name__)

# How long a team's keys are kept: a key added is used, and one retired dropped, within this.
KEEP_SECONDS = 30.0
# How long a fetch of a team's keys may take.
FETCH_TIMEOUT = 5.0
# How long past their time a team's keys still sign while they cannot be fetched again.
STALE_SECONDS = 300.0
# How long after a failed fetch a team's keys are asked for again.
RETRY_SECONDS = 5.0
# How long a team without a key is kept so: a key added is used by the next call.
NO_KEY_SECONDS = 1.0
DEFAULT_ISSUER = "duetime"
_WEBHOOK = (job_pb2.CALL_SIGNING_WEBHOOK, job_pb2.CALL_SIGNING_WEBHOOK_AND_ID_TOKEN)
_ID_TOKEN = (job_pb2.CALL_SIGNING_ID_TOKEN, job_pb2.CALL_SIGNING_WEBHOOK_AND_ID_TOKEN)
# The names each kind of signature sets, case-folded: the job's own headers of the names of
# the kinds added give way; those of a kind not added are sent as the job set them.
_WEBHOOK_NAMES = frozenset(("webhook-id", "webhook-timestamp", "webhook-signature"))
_ID_TOKEN_NAMES = frozenset(("authorization",))
# Answers of a fetch that keys fetched before must not override.
_REFUSALS = frozenset((grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.INVALID_ARGUMENT))

# Fetches a team's keys (its first argument) for one of its runs this worker holds (the second).
Fetch = Callable[[str, str], Awaitable[pb.GetSigningKeysResponse]]
# Adds a call's signature headers to its headers, over its body, as of the moment it is called:
# run just before the request is handed over, after any wait for a connection.
Stamp = Callable[[dict[str, str], bytes], None]


@dataclass(frozen=True)
class _Team:
    keys: SigningKeys | None  # None: none to sign with, for the reason below
    default: job_pb2.CallSigning.ValueType
    until: float  # when to fetch them again
    fetched: float
    missing: str = "its team has no active signing key (AdminService.AddSigningKey)"


# What a worker knows of a team from a scheduler older than signed calls: it signs nothing, and
# a job that asks for signing waits (its call fails, retryably) until the schedulers are new.
def _unserved(now: float, keep: float) -> _Team:
    return _Team(
        None,
        job_pb2.CALL_SIGNING_OFF,
        now + keep,
        now,
        "the schedulers do not serve signing keys (an older build)",
    )


@dataclass(frozen=True)
class SignedCall:
    """What a call is about, as its signatures name it."""

    team: str
    run_id: str  # the run the call is for: what entitles the worker to the team's keys
    signing: job_pb2.CallSigning.ValueType  # unspecified: the team's default
    message_id: str  # webhook-id: the same on every attempt of the run
    audience: str  # the job's; empty: the default from ``url``
    subject: str
    attempt: int
    url: str = ""
    # The keys the call may be signed with, as its start answered them (None: not said, e.g.
    # an older scheduler's start): a key not named here is never used, even from those kept.
    key_ids: tuple[str, ...] | None = None
    # Signed only with keys fetched for this call, never with those kept (a notification: no
    # start names its keys, so a key revoked is not used again).
    fresh: bool = False

    def token_audience(self) -> str:
        """The ID token's audience, worked out only for a call that carries one."""
        return self.audience or default_audience(self.url)


def fetch_from(
    stub: worker_service_pb2_grpc.WorkerServiceAsyncStub,
    metadata: tuple[tuple[str, str], ...],
    worker_id: str,
    timeout: float = FETCH_TIMEOUT,
) -> Fetch:
    """A fetch of a team's keys from the schedulers through ``stub``, by worker ``worker_id``."""

    async def fetch(team: str, run_id: str) -> pb.GetSigningKeysResponse:
        request = pb.GetSigningKeysRequest(team=team, run_id=run_id, worker_id=worker_id)
        return await stub.GetSigningKeys(request, metadata=metadata, timeout=timeout)

    return fetch


class CallSigner:
    """Signs calls with their teams' keys, fetched through ``fetch`` and kept for ``keep``
    seconds; ID tokens name ``issuer``."""

    def __init__(
        self,
        fetch: Fetch,
        issuer: str = DEFAULT_ISSUER,
        *,
        keep: float = KEEP_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._fetch = fetch
        self._issuer = issuer
        self._keep = keep
        self._clock = clock
        self._wall = wall
        self._teams: dict[str, _Team] = {}
        self._fetching: dict[str, asyncio.Future[_Team]] = {}

    async def sign(self, call: SignedCall, headers: dict[str, str], body: bytes) -> Outcome | None:
        """Adds the call's signature headers to ``headers`` now (``prepare``, then its stamp);
        an outcome instead when the call cannot be signed (nothing is sent)."""
        ready = await self.prepare(call, headers)
        if ready is None or isinstance(ready, Outcome):
            return ready
        ready(headers, body)
        return None

    async def prepare(self, call: SignedCall, headers: dict[str, str]) -> Stamp | Outcome | None:
        """What signing the call takes, its team's keys in hand: None when it is not signed,
        an outcome when it cannot be (nothing is sent), else the stamp that signs it (replacing
        the job's own headers of the names of the kinds it adds) when it is sent."""
        if call.signing == job_pb2.CALL_SIGNING_OFF:
            return None
        team = await self._keys_for(call)
        if isinstance(team, Outcome):
            return team
        signing = call.signing or team.default
        if signing == job_pb2.CALL_SIGNING_OFF or signing == job_pb2.CALL_SIGNING_UNSPECIFIED:
            return None
        if team.keys is None:
            return Outcome.failed(
                f"not signed: the job's calls are signed but {team.missing}",
                retryable=True,  # a key added, or the schedulers upgraded, lets it through
                call=NOT_BEGUN,
            )
        if (
            signing in _ID_TOKEN
            and not call.signing
            and any(n.lower() in _ID_TOKEN_NAMES for n in headers)
        ):
            return Outcome.failed(
                "not signed: the team's default signing adds an ID token in the Authorization"
                " header, which the job sets itself; set the job's signing (OFF or WEBHOOK to"
                " keep its header, ID_TOKEN to replace it)",
                retryable=False,
                call=NOT_BEGUN,
            )
        return functools.partial(self._stamp, call, signing, team.keys)

    def _stamp(
        self,
        call: SignedCall,
        signing: job_pb2.CallSigning.ValueType,
        keys: SigningKeys,
        headers: dict[str, str],
        body: bytes,
    ) -> None:
        now = int(self._wall())
        if signing in _WEBHOOK:
            _drop_names(headers, _WEBHOOK_NAMES)
            headers.update(webhook_headers(keys, call.message_id, now, body))
        if signing in _ID_TOKEN:
            claims = TokenClaims(
                self._issuer, call.token_audience(), call.subject, call.message_id, call.attempt
            )
            _drop_names(headers, _ID_TOKEN_NAMES)
            headers["Authorization"] = f"Bearer {mint_id_token(keys, claims, now)}"

    def warm(self, team: str, run_id: str, within: float) -> None:
        """Fetches a team's keys (for ``run_id``) in the background unless those kept are still
        kept ``within`` seconds from now: an attempt started ahead warms them for its call, so
        a herd's calls at its instant do not all wait for one fetch."""
        known = self._teams.get(team)
        if known is None or known.until <= self._clock() + within:
            self._fetch_of(team, run_id)

    async def _keys_for(self, call: SignedCall) -> _Team | Outcome:
        """The call's team as kept or fetched, its keys only those the call may be signed with;
        an outcome when they cannot be read."""
        asked = self._clock()
        try:
            team = await self._team(call)
        except (aio.AioRpcError, TimeoutError, ValueError) as error:  # ValueError: a bad key
            return _unreadable(error)
        if call.fresh and team.fetched < asked:  # kept keys, answered while a fetch failed
            return Outcome.failed(
                "not signed: the team's signing keys could not be fetched again",
                retryable=True,
                call=NOT_BEGUN,
            )
        if call.key_ids is None or team.keys is None:
            return team
        named = [key for key in team.keys.active if key.key_id in call.key_ids]
        if len(named) == len(team.keys.active):
            return team
        return dataclasses.replace(
            team,
            keys=SigningKeys(named) if named else None,
            missing="none of its keys named at the call's start is active",
        )

    async def _team(self, call: SignedCall) -> _Team:
        """The call's team: as kept, unless the call is ``fresh``, those kept have expired, or
        its start named a key they lack (one added since: fetched again)."""
        known = self._teams.get(call.team)
        if (
            known is not None
            and not call.fresh
            and known.until > self._clock()
            and not _lacks(known, call.key_ids)
        ):
            return known
        return await asyncio.shield(self._fetch_of(call.team, call.run_id))

    def _fetch_of(self, team: str, run_id: str) -> asyncio.Future[_Team]:
        """The team's fetch under way (for whichever of its runs began it), or one begun now
        for ``run_id``."""
        pending = self._fetching.get(team)
        if pending is None:
            pending = asyncio.ensure_future(self._load(team, run_id))
            self._fetching[team] = pending
            pending.add_done_callback(lambda done: self._fetched(team, done))
        return pending

    def _fetched(self, team: str, done: asyncio.Future[_Team]) -> None:
        self._fetching.pop(team, None)
        if not done.cancelled():
            done.exception()  # a warm-up's failure is the next call's to see (``_stale``)

    async def _load(self, team: str, run_id: str) -> _Team:
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
        keys = [
            signing_key_from(k.key_id, k.webhook_secret, k.token_private_key) for k in answer.keys
        ]
        now = self._clock()
        keep = self._keep if keys else min(self._keep, NO_KEY_SECONDS)
        loaded = _Team(
            SigningKeys(keys) if keys else None, answer.default_call_signing, now + keep, now
        )
        self._teams[team] = loaded
        return loaded

    def _stale(self, team: str, error: aio.AioRpcError | TimeoutError) -> _Team:
        known, now = self._teams.get(team), self._clock()
        if known is None or now - known.fetched > STALE_SECONDS:
            raise error
        log.warning(
            "a team's signing keys could not be fetched again; those fetched before sign",
            extra={"action": "signing_keys_stale", "team": team, "why": _code(error)},
        )
        # Asked again after a while, not by every call meanwhile.
        self._teams[team] = dataclasses.replace(known, until=now + RETRY_SECONDS)
        return known


def _lacks(team: _Team, key_ids: tuple[str, ...] | None) -> bool:
    """Whether ``key_ids`` names a key the team's kept keys do not hold."""
    if not key_ids:
        return False
    held = {key.key_id for key in team.keys.active} if team.keys is not None else set()
    return not held.issuperset(key_ids)


def _code(error: Exception) -> str:
    if isinstance(error, aio.AioRpcError):
        return str(error.code().name)
    return "DEADLINE_EXCEEDED" if isinstance(error, TimeoutError) else type(error).__name__


def _unreadable(error: Exception) -> Outcome:
    """A call not signed because its team's keys could not be read: retried, unless the
    team is unknown."""
    unknown = isinstance(error, aio.AioRpcError) and error.code() == grpc.StatusCode.NOT_FOUND
    return Outcome.failed(
        f"not signed: the team's signing keys could not be read ({_code(error)})",
        retryable=not unknown,
        call=NOT_BEGUN,
    )


def _drop_names(headers: dict[str, str], names: frozenset[str]) -> None:
    for name in [n for n in headers if n.lower() in names]:
        del headers[name]


def default_audience(url: str) -> str:
    """The ID token's audience when the job names none: its URL without query, fragment or
    user info, which may hold a secret (a webhook's token) that a token must not carry."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:  # a URL the call itself refuses
        return ""
    host = f"[{host}]" if ":" in host else host
    return urlunsplit((parts.scheme, f"{host}{port}", parts.path, "", ""))


def signed_call(run: pb.RunSpec, attempt: int) -> SignedCall:
    """What a run's call is, as its signatures name it."""
    http = run.target.http
    return SignedCall(
        team=run.team,
        run_id=run.run_id,
        signing=http.signing,
        message_id=run.idempotency_key,
        audience=http.token_audience,
        subject=f"teams/{run.team}/jobs/{run.job_id}",
        attempt=attempt,
        url=http.url,
        key_ids=tuple(run.signing_keys.key_ids) if run.HasField("signing_keys") else None,
    )
