"""Signing a team's calls (``duetime_infra.signing``): the headers that let a target check that
a call came from Duetime, over the exact body sent.

A call is signed with its team's keys as ``team_keys`` keeps them, and only with the keys its
start named (``SignedCall.key_ids``), so a herd of calls costs one fetch per team and each call
only its signatures. A call started ahead of its time is signed ahead (``sign_ahead``), in the
wait before its call rather than at a herd's instant; its send uses those signatures while they
fit it (``SignedAhead.fits``), else signs it then. The keys are never logged, never in a span or
a metric.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import grpc
from grpc import aio

from duetime_core.jobspec import CallSigning
from duetime_infra.signing import SigningKeys, TokenClaims, mint_id_token, webhook_headers
from duetime_worker.targets.http.signed_ahead import SignedAhead, key_ids
from duetime_worker.targets.http.team_keys import (
    KEEP_SECONDS,
    Fetch,
    KeyCache,
    TeamKeys,
    error_code,
)
from duetime_worker.targets.outcome import NOT_BEGUN, Outcome
from duetime_worker.targets.run import HttpCall, TargetRun

DEFAULT_ISSUER = "duetime"
# The names each kind of signature sets, case-folded: the job's own headers of the names of
# the kinds added give way; those of a kind not added are sent as the job set them.
_WEBHOOK_NAMES = frozenset(("webhook-id", "webhook-timestamp", "webhook-signature"))
_ID_TOKEN_NAMES = frozenset(("authorization",))
# Adds a call's signature headers to its headers, over its body, as of the moment it is called:
# run just before the request is handed over, after any wait for a connection.
Stamp = Callable[[dict[str, str], bytes], None]


@dataclass(frozen=True)
class SignedCall:
    """What a call is about, as its signatures name it."""

    team: str
    run_id: str  # the run the call is for: what entitles the worker to the team's keys
    signing: CallSigning | None  # None: the team's default
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
    # A refusal of its keys (PERMISSION_DENIED) is final, not retried: a notification, whose
    # run's entitlement never comes back (``signing_for_run``). A run's call is retried, as
    # another attempt may hold the keys.
    refusal_final: bool = False

    def token_audience(self) -> str:
        """The ID token's audience, worked out only for a call that carries one."""
        return self.audience or default_audience(self.url)


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
        self._keys = KeyCache(fetch, keep=keep, clock=clock)
        self._issuer = issuer
        self._clock = clock
        self._wall = wall

    async def sign(self, call: SignedCall, headers: dict[str, str], body: bytes) -> Outcome | None:
        """Adds the call's signature headers to ``headers`` now (``prepare``, then its stamp);
        an outcome instead when the call cannot be signed (nothing is sent)."""
        ready = await self.prepare(call, headers)
        if ready is None or isinstance(ready, Outcome):
            return ready
        ready(headers, body)
        return None

    async def prepare(
        self, call: SignedCall, headers: Mapping[str, str], ahead: SignedAhead | None = None
    ) -> Stamp | Outcome | None:
        """What signing the call takes, its team's keys in hand: None when it is not signed,
        an outcome when it cannot be (nothing is sent), else the stamp that signs it (replacing
        the job's own headers of the names of the kinds it adds) when it is sent: with the
        signatures made ``ahead`` when they fit the send, else made then."""
        ready = await self._ready(call, headers)
        if ready is None or isinstance(ready, Outcome):
            return ready
        return functools.partial(self._stamp, call, *ready, ahead)

    async def sign_ahead(
        self, call: SignedCall, headers: Mapping[str, str], body: bytes, within: float
    ) -> SignedAhead | None:
        """The call's signatures made now, for its send ``within`` seconds from now (its team's
        keys warmed for then, ``warm``); None when it is not signed or cannot be now (its send
        signs it, or says why not)."""
        self.warm(call.team, call.run_id, within)
        ready = await self._ready(call, headers)
        if ready is None or isinstance(ready, Outcome):
            return None
        signing, keys = ready
        now = int(self._wall())
        signed = self._signatures(call, signing, keys, body, now)
        return SignedAhead(call.attempt, signing, key_ids(keys), body, now, signed)

    async def _ready(
        self, call: SignedCall, headers: Mapping[str, str]
    ) -> tuple[CallSigning, SigningKeys] | Outcome | None:
        """How the call is signed and with which keys (``prepare``)."""
        if call.signing is CallSigning.OFF:
            return None
        team = await self._keys_for(call)
        if isinstance(team, Outcome):
            return team
        signing = call.signing or team.default
        if signing is CallSigning.OFF:
            return None
        if team.keys is None:
            return Outcome.failed(
                f"not signed: the job's calls are signed but {team.missing}",
                retryable=True,  # a key added, or the schedulers upgraded, lets it through
                call=NOT_BEGUN,
            )
        if (
            signing.id_token
            and call.signing is None
            and any(n.lower() in _ID_TOKEN_NAMES for n in headers)
        ):
            return Outcome.failed(
                "not signed: the team's default signing adds an ID token in the Authorization"
                " header, which the job sets itself; set the job's signing (OFF or WEBHOOK to"
                " keep its header, ID_TOKEN to replace it)",
                retryable=False,
                call=NOT_BEGUN,
            )
        return signing, team.keys

    def _stamp(
        self,
        call: SignedCall,
        signing: CallSigning,
        keys: SigningKeys,
        ahead: SignedAhead | None,
        headers: dict[str, str],
        body: bytes,
    ) -> None:
        now = int(self._wall())
        if ahead is not None and ahead.fits(call.attempt, signing, keys, body, now):
            signed = ahead.headers
        else:
            signed = self._signatures(call, signing, keys, body, now)
        if signing.webhook:
            _drop_names(headers, _WEBHOOK_NAMES)
        if signing.id_token:
            _drop_names(headers, _ID_TOKEN_NAMES)
        headers.update(signed)

    def _signatures(
        self, call: SignedCall, signing: CallSigning, keys: SigningKeys, body: bytes, now: int
    ) -> dict[str, str]:
        """The call's signature headers, over ``body``, made at ``now``."""
        signed = webhook_headers(keys, call.message_id, now, body) if signing.webhook else {}
        if signing.id_token:
            claims = TokenClaims(
                self._issuer, call.token_audience(), call.subject, call.message_id, call.attempt
            )
            signed["Authorization"] = f"Bearer {mint_id_token(keys, claims, now)}"
        return signed

    def warm(self, team: str, run_id: str, within: float) -> None:
        """Fetches a team's keys (for ``run_id``) in the background unless those kept are still
        kept ``within`` seconds from now: an attempt started ahead warms them for its call, so
        a herd's calls at its instant do not all wait for one fetch."""
        self._keys.warm(team, run_id, within)

    async def _keys_for(self, call: SignedCall) -> TeamKeys | Outcome:
        """The call's team as kept or fetched, its keys only those the call may be signed with;
        an outcome when they cannot be read."""
        asked = self._clock()
        try:
            team = await self._keys.get(
                call.team, call.run_id, fresh=call.fresh, key_ids=call.key_ids
            )
        except aio.AioRpcError as error:
            refused = error.code() == grpc.StatusCode.PERMISSION_DENIED
            return _refused(error) if refused and call.refusal_final else _unreadable(error)
        except (TimeoutError, ValueError) as error:  # ValueError: a bad key
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


def _unreadable(error: Exception) -> Outcome:
    """A call not signed because its team's keys could not be read: retried, unless the
    team is unknown."""
    unknown = isinstance(error, aio.AioRpcError) and error.code() == grpc.StatusCode.NOT_FOUND
    return Outcome.failed(
        f"not signed: the team's signing keys could not be read ({error_code(error)})",
        retryable=not unknown,
        call=NOT_BEGUN,
    )


def _refused(error: aio.AioRpcError) -> Outcome:
    """A call whose refusal is final not signed: the keys were refused, for the scheduler's
    why (a run, a team and a time, never a secret)."""
    return Outcome.failed(
        f"not signed: the team's signing keys were refused: {error.details()}",
        retryable=False,
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


def signed_call(run: TargetRun, http: HttpCall, attempt: int) -> SignedCall:
    """What a run's call (``http``, its target) is, as its signatures name it."""
    return SignedCall(
        team=run.team,
        run_id=run.run_id,
        signing=http.signing,
        message_id=run.idempotency_key,
        audience=http.token_audience,
        subject=f"teams/{run.team}/jobs/{run.job_id}",
        attempt=attempt,
        url=http.url,
        key_ids=run.key_ids,
    )
