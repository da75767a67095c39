"""The worker's CallSigner: a team's keys fetched once while they are kept, concurrent calls
sharing one fetch, a call that cannot be signed never sent, and signatures made ahead of a call
used at its send only while they fit it."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import grpc
import jwt
from grpc import aio
from standardwebhooks.webhooks import Webhook

from duetime.jobs.v1 import job_pb2
from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_core.jobspec import CallSigning
from duetime_infra.signing import SigningKeys, new_signing_key
from duetime_worker.attempt.wire import fetched_keys
from duetime_worker.targets.http.signed_ahead import AHEAD_FRESH_SECONDS, SignedAhead
from duetime_worker.targets.http.signer import CallSigner, SignedCall, default_audience
from duetime_worker.targets.http.team_keys import STALE_SECONDS, FetchedKeys
from duetime_worker.targets.outcome import NOT_BEGUN, Outcome

KEY = new_signing_key("k1")
RUN = "00000000-0000-4000-8000-000000000001"
BODY = b'{"a": 1}'


def call(signing: CallSigning | None = CallSigning.WEBHOOK) -> SignedCall:
    return SignedCall(
        "team-a", RUN, signing, "run-key", "https://t.test/", "teams/team-a/jobs/j", 1
    )


class Fetches:
    def __init__(
        self,
        error: grpc.StatusCode | None = None,
        default: int = job_pb2.CALL_SIGNING_UNSPECIFIED,
    ) -> None:
        self.teams: list[str] = []
        self.runs: list[str] = []
        self.error = error
        self.default = default
        self.keyless = False
        self.keys = [KEY]

    async def __call__(self, team: str, run_id: str) -> FetchedKeys:
        self.teams.append(team)
        self.runs.append(run_id)
        await asyncio.sleep(0)  # let concurrent callers find this fetch under way
        if self.error is not None:
            raise aio.AioRpcError(self.error, aio.Metadata(), aio.Metadata(), "no")
        return fetched_keys(
            pb.GetSigningKeysResponse(
                keys=[
                    pb.SigningKeyMaterial(
                        key_id=key.key_id,
                        webhook_secret=key.secret,
                        token_private_key=key.private_der(),
                    )
                    for key in ([] if self.keyless else self.keys)
                ],
                default_call_signing=self.default,  # type: ignore[arg-type]
            )
        )


async def test_keys_are_fetched_once_while_kept_and_again_after() -> None:
    now = [0.0]
    fetches = Fetches()
    signer = CallSigner(fetches, keep=30, clock=lambda: now[0])
    headers: list[dict[str, str]] = [{} for _ in range(5)]
    refused = await asyncio.gather(*(signer.sign(call(), h, BODY) for h in headers))
    assert refused == [None] * 5
    assert fetches.teams == ["team-a"]
    for h in headers:
        assert Webhook(KEY.secret_text).verify(BODY, h) == {"a": 1}
    now[0] = 31.0
    await signer.sign(call(), {}, BODY)
    assert fetches.teams == ["team-a", "team-a"]


async def test_a_call_whose_keys_cannot_be_read_is_not_sent() -> None:
    down = await CallSigner(Fetches(grpc.StatusCode.UNAVAILABLE)).sign(call(), {}, BODY)
    assert down is not None
    assert (down.retryable, down.call) == (True, NOT_BEGUN)
    unknown = await CallSigner(Fetches(grpc.StatusCode.NOT_FOUND)).sign(call(), {}, BODY)
    assert unknown is not None
    assert not unknown.retryable


async def test_an_unsigned_job_costs_no_fetch_and_signed_names_give_way() -> None:
    fetches = Fetches()
    signer = CallSigner(fetches)
    assert await signer.sign(call(CallSigning.OFF), {}, BODY) is None
    assert fetches.teams == []
    headers = {"Authorization": "Bearer the-team-s-own", "X-Other": "kept"}
    await signer.sign(call(CallSigning.ID_TOKEN), headers, BODY)
    assert headers["X-Other"] == "kept"
    assert headers["Authorization"].startswith("Bearer ey")


async def test_only_the_names_of_the_kinds_added_give_way() -> None:
    signer = CallSigner(Fetches(default=job_pb2.CALL_SIGNING_WEBHOOK))
    headers = {"authorization": "ApiKey the-job-s-own", "Webhook-Id": "the-job-s"}
    assert await signer.sign(call(None), headers, BODY) is None
    assert headers["authorization"] == "ApiKey the-job-s-own"
    assert "Webhook-Id" not in headers
    assert Webhook(KEY.secret_text).verify(BODY, headers) == {"a": 1}


async def test_a_team_default_id_token_does_not_replace_the_job_s_authorization() -> None:
    signer = CallSigner(Fetches(default=job_pb2.CALL_SIGNING_WEBHOOK_AND_ID_TOKEN))
    headers = {"Authorization": "ApiKey the-job-s-own"}
    refused = await signer.sign(call(None), headers, BODY)
    assert refused is not None
    assert (refused.retryable, refused.call) == (False, NOT_BEGUN)
    assert "Authorization" in refused.error
    assert headers == {"Authorization": "ApiKey the-job-s-own"}


async def test_a_team_without_a_key_is_retried_and_asked_again_within_a_second() -> None:
    now = [0.0]
    fetches = Fetches()
    fetches.keyless = True
    signer = CallSigner(fetches, keep=30, clock=lambda: now[0])
    refused = await signer.sign(call(), {}, BODY)
    assert refused is not None
    assert (refused.retryable, refused.call) == (True, NOT_BEGUN)
    assert "AddSigningKey" in refused.error
    fetches.keyless = False  # a key added
    now[0] = 1.0
    assert await signer.sign(call(), {}, BODY) is None
    assert fetches.teams == ["team-a", "team-a"]


async def test_an_older_scheduler_means_unsigned_and_asked_for_signing_waits() -> None:
    signer = CallSigner(Fetches(grpc.StatusCode.UNIMPLEMENTED))
    headers: dict[str, str] = {}
    assert await signer.sign(call(None), headers, BODY) is None
    assert headers == {}
    asked = await signer.sign(call(), {}, BODY)
    assert asked is not None
    assert (asked.retryable, asked.call) == (True, NOT_BEGUN)
    assert "older build" in asked.error


async def test_keys_fetched_before_sign_while_a_fetch_fails_for_a_while() -> None:
    now = [0.0]
    fetches = Fetches()
    signer = CallSigner(fetches, keep=30, clock=lambda: now[0])
    assert await signer.sign(call(), {}, BODY) is None
    fetches.error = grpc.StatusCode.UNAVAILABLE
    now[0] = 31.0
    headers: dict[str, str] = {}
    assert await signer.sign(call(), headers, BODY) is None
    assert Webhook(KEY.secret_text).verify(BODY, headers) == {"a": 1}
    # Not asked again by every call meanwhile.
    await signer.sign(call(), {}, BODY)
    assert len(fetches.teams) == 2
    now[0] = 30 + STALE_SECONDS + 1
    late = await signer.sign(call(), {}, BODY)
    assert late is not None
    assert late.retryable


async def test_a_refused_fetch_is_not_answered_by_keys_fetched_before() -> None:
    now = [0.0]
    fetches = Fetches()
    signer = CallSigner(fetches, keep=30, clock=lambda: now[0])
    assert await signer.sign(call(), {}, BODY) is None
    assert fetches.runs == [RUN]  # the fetch names the run the call is for
    fetches.error = grpc.StatusCode.PERMISSION_DENIED
    now[0] = 31.0
    headers: dict[str, str] = {}
    refused = await signer.sign(call(), headers, BODY)
    assert refused is not None
    assert "PERMISSION_DENIED" in refused.error
    assert headers == {}


async def test_a_refusal_is_final_only_for_a_call_that_says_so() -> None:
    fetches = Fetches(grpc.StatusCode.PERMISSION_DENIED)
    signer = CallSigner(fetches, keep=0)
    run_call = await signer.sign(call(), {}, BODY)
    assert run_call is not None
    assert run_call.retryable  # another attempt may hold the keys
    notification = await signer.sign(replace(call(), fresh=True, refusal_final=True), {}, BODY)
    assert notification is not None
    assert (notification.retryable, notification.call) == (False, NOT_BEGUN)
    assert "were refused: no" in notification.error  # the scheduler's why
    fetches.error = grpc.StatusCode.UNAVAILABLE
    hiccup = await signer.sign(replace(call(), fresh=True, refusal_final=True), {}, BODY)
    assert hiccup is not None
    assert hiccup.retryable  # only a refusal is final


def test_the_default_audience_is_the_url_without_what_may_hold_a_secret() -> None:
    assert default_audience("https://a.example:8443/hook?token=s3cret#x") == (
        "https://a.example:8443/hook"
    )
    assert default_audience("http://[::1]/p") == "http://[::1]/p"
    # docs/clients.md's example: user info dropped, host lower-cased, port and path as written.
    assert default_audience("https://user:pw@API.example:8443/Hook?token=x#y") == (
        "https://api.example:8443/Hook"
    )
    assert default_audience("https://a.example:443/x") == "https://a.example:443/x"


async def test_a_token_without_an_audience_of_its_job_names_its_url_without_the_query() -> None:
    unnamed = SignedCall(
        "team-a",
        RUN,
        CallSigning.ID_TOKEN,
        "run-key",
        "",
        "teams/team-a/jobs/j",
        1,
        url="https://a.example/hook?token=s3cret",
    )
    headers: dict[str, str] = {}
    assert await CallSigner(Fetches()).sign(unnamed, headers, BODY) is None
    token = headers["Authorization"].removeprefix("Bearer ")
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["aud"] == "https://a.example/hook"


async def test_an_attempt_started_ahead_warms_its_teams_keys_for_its_call() -> None:
    now = [0.0]
    fetches = Fetches()
    signer = CallSigner(fetches, keep=30, clock=lambda: now[0])
    signer.warm("team-a", RUN, within=20)  # the call is 20 s away: fetched now, in the background
    assert fetches.teams == []  # nothing awaited
    await turns()
    assert fetches.teams == ["team-a"]
    signer.warm("team-a", RUN, within=20)  # kept past then (until 30): nothing more
    now[0] = 20.0
    headers: dict[str, str] = {}
    assert await signer.sign(call(), headers, BODY) is None
    assert Webhook(KEY.secret_text).verify(BODY, headers) == {"a": 1}
    assert fetches.teams == ["team-a"]
    signer.warm("team-a", RUN, within=15)  # kept until 30, not past 35: fetched again now
    await turns()
    assert fetches.teams == ["team-a", "team-a"]
    now[0] = 45.0  # kept until 50 by that fetch: the call does not fetch
    assert await signer.sign(call(), {}, BODY) is None
    assert fetches.teams == ["team-a", "team-a"]


async def turns() -> None:
    """Lets the background fetches run to their end."""
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_failed_warm_up_leaves_the_call_to_fetch_again() -> None:
    fetches = Fetches(grpc.StatusCode.UNAVAILABLE)
    signer = CallSigner(fetches)
    signer.warm("team-a", RUN, within=5)
    await turns()
    assert fetches.teams == ["team-a"]
    fetches.error = None
    assert await signer.sign(call(), {}, BODY) is None
    assert fetches.teams == ["team-a", "team-a"]


SECOND = new_signing_key("k2")


def signatures(headers: dict[str, str]) -> int:
    return len(headers["webhook-signature"].split(" "))


async def test_a_call_is_signed_only_with_the_keys_its_start_named() -> None:
    fetches = Fetches()
    fetches.keys = [KEY, SECOND]
    signer = CallSigner(fetches, keep=30, clock=lambda: 0.0)
    both, one = {}, {}  # type: ignore[var-annotated]
    assert await signer.sign(replace(call(), key_ids=("k1", "k2")), both, BODY) is None
    # k1 revoked before this call's start: not used, though kept; no fetch for it.
    assert await signer.sign(replace(call(), key_ids=("k2",)), one, BODY) is None
    assert (signatures(both), signatures(one), len(fetches.teams)) == (2, 1, 1)
    assert Webhook(SECOND.secret_text).verify(BODY, one)
    # A key named that those kept lack (one added since) is fetched; none of those named
    # active: not signed.
    refused = await signer.sign(replace(call(), key_ids=("k3",)), {}, BODY)
    assert len(fetches.teams) == 2
    assert refused is not None
    assert (refused.retryable, refused.call) == (True, NOT_BEGUN)
    assert "none of its keys named" in refused.error


async def test_a_fresh_call_never_signs_with_keys_kept() -> None:
    now = [0.0]
    fetches = Fetches()
    signer = CallSigner(fetches, keep=30, clock=lambda: now[0])
    fresh = replace(call(), fresh=True)
    assert await signer.sign(fresh, {}, BODY) is None
    assert await signer.sign(fresh, {}, BODY) is None
    assert len(fetches.teams) == 2  # fetched for each, kept or not
    fetches.error = grpc.StatusCode.UNAVAILABLE
    now[0] = 1.0
    failed = await signer.sign(fresh, {}, BODY)
    assert failed is not None
    assert "could not be fetched again" in failed.error
    assert await signer.sign(call(), {}, BODY) is None  # a call that may use kept keys does


def both(attempt: int = 1) -> SignedCall:
    return replace(call(CallSigning.WEBHOOK_AND_ID_TOKEN), attempt=attempt)


def token_claims(headers: dict[str, str]) -> dict[str, object]:
    token = headers["Authorization"].removeprefix("Bearer ")
    public = KEY.private_key.public_key()
    claims: dict[str, object] = jwt.decode(token, public, algorithms=["ES256"], audience=AUDIENCE)
    return claims


AUDIENCE = "https://t.test/"


async def sent_at(
    signer: CallSigner, wall: list[float], at: float, ahead: SignedAhead | None, **changes: object
) -> dict[str, str]:
    """The signature headers of ``both()`` (with ``changes``) sent at wall time ``at``, with
    the signatures made ``ahead``."""
    wall[0] = at
    headers: dict[str, str] = {}
    stamp = await signer.prepare(replace(both(), **changes), headers, ahead)  # type: ignore[arg-type]
    assert callable(stamp)
    stamp(headers, BODY)
    return headers


async def test_signatures_made_ahead_are_what_a_send_they_fit_carries() -> None:
    now = float(int(time.time()))
    wall = [now - 20]  # made 20 s before the send
    fetches = Fetches()
    signer = CallSigner(fetches, keep=60, clock=lambda: 0.0, wall=lambda: wall[0])
    ahead = await signer.sign_ahead(both(), {}, BODY, within=20)
    assert ahead is not None
    headers = await sent_at(signer, wall, now, ahead)
    assert headers == dict(ahead.headers)
    assert headers["webhook-timestamp"] == str(int(now - 20))
    assert Webhook(KEY.secret_text).verify(BODY, headers) == {"a": 1}
    assert token_claims(headers)["iat"] == int(now - 20)
    assert fetches.teams == ["team-a"]  # the send used the keys fetched ahead


async def test_signatures_made_ahead_that_do_not_fit_the_send_are_made_again() -> None:
    now = float(int(time.time()))
    wall = [now - AHEAD_FRESH_SECONDS - 1]
    fetches = Fetches()
    signer = CallSigner(fetches, keep=60, clock=lambda: 0.0, wall=lambda: wall[0])
    stale = await signer.sign_ahead(both(), {}, BODY, within=20)
    headers = await sent_at(signer, wall, now, stale)
    assert headers["webhook-timestamp"] == str(int(now))
    assert Webhook(KEY.secret_text).verify(BODY, headers) == {"a": 1}
    assert token_claims(headers)["iat"] == int(now)
    wall[0] = now - 1
    fresh = await signer.sign_ahead(both(), {}, BODY, within=20)
    another = await sent_at(signer, wall, now, fresh, attempt=2)
    assert token_claims(another)["duetime_attempt"] == 2
    webhook_only = await sent_at(signer, wall, now, fresh, signing=CallSigning.WEBHOOK)
    assert "Authorization" not in webhook_only
    assert webhook_only["webhook-timestamp"] == str(int(now))


def made_ahead(made: int = 1000, keys: tuple[str, ...] = ("k1",)) -> SignedAhead:
    return SignedAhead(1, CallSigning.WEBHOOK, keys, BODY, made, {})


def test_signatures_made_ahead_fit_only_their_send_while_fresh() -> None:
    one, two = SigningKeys([KEY]), SigningKeys([KEY, SECOND])
    ahead = made_ahead()
    assert ahead.fits(1, CallSigning.WEBHOOK, one, BODY, 1000)
    assert ahead.fits(1, CallSigning.WEBHOOK, one, bytes(BODY), 1000 + AHEAD_FRESH_SECONDS)
    assert not ahead.fits(1, CallSigning.WEBHOOK, one, BODY, 1001 + AHEAD_FRESH_SECONDS)
    assert not ahead.fits(1, CallSigning.WEBHOOK, one, BODY, 999)  # the wall clock went back
    assert not ahead.fits(2, CallSigning.WEBHOOK, one, BODY, 1000)  # another attempt
    assert not ahead.fits(1, CallSigning.WEBHOOK, one, BODY + b" ", 1000)  # another body
    assert not ahead.fits(1, CallSigning.WEBHOOK_AND_ID_TOKEN, one, BODY, 1000)
    assert not ahead.fits(1, CallSigning.WEBHOOK, two, BODY, 1000)  # a key added since
    retired = made_ahead(keys=("k1", "k2"))
    assert retired.fits(1, CallSigning.WEBHOOK, two, BODY, 1000)
    assert not retired.fits(1, CallSigning.WEBHOOK, SigningKeys([SECOND]), BODY, 1000)


async def test_signing_ahead_uses_only_the_keys_the_start_named_and_warms_them() -> None:
    now = [0.0]
    fetches = Fetches()
    fetches.keys = [KEY, SECOND]
    signer = CallSigner(fetches, keep=30, clock=lambda: now[0])
    ahead = await signer.sign_ahead(replace(both(), key_ids=("k2",)), {}, BODY, within=20)
    assert ahead is not None
    assert ahead.key_ids == ("k2",)
    assert Webhook(SECOND.secret_text).verify(BODY, dict(ahead.headers))
    assert fetches.teams == ["team-a"]
    await signer.sign_ahead(both(), {}, BODY, within=40)  # not kept until then: fetched again
    await turns()
    assert fetches.teams == ["team-a", "team-a"]


async def test_a_call_that_cannot_be_signed_ahead_is_left_to_its_send() -> None:
    assert await CallSigner(Fetches()).sign_ahead(call(CallSigning.OFF), {}, BODY, 5) is None
    down = CallSigner(Fetches(grpc.StatusCode.UNAVAILABLE))
    assert await down.sign_ahead(both(), {}, BODY, 5) is None
    own = CallSigner(Fetches(default=job_pb2.CALL_SIGNING_WEBHOOK_AND_ID_TOKEN))
    assert await own.sign_ahead(call(None), {"Authorization": "x"}, BODY, 5) is None
    refused = await own.prepare(call(None), {"Authorization": "x"}, None)
    assert isinstance(refused, Outcome)  # the send says why
