"""Signed calls through real servers: keys added, rotated and retired through AdminService, the
JWKS the API serves to anyone, the keys a worker fetches from WorkerService, a call started
ahead of its time signed ahead, and a real HTTP target that checks what it received with
independent verifiers (the Standard Webhooks library, PyJWT)."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import grpc
import jwt
import pytest
from google.protobuf.field_mask_pb2 import FieldMask
from google.protobuf.json_format import MessageToDict
from grpc import aio
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from duetime.admin.v1 import admin_service_pb2 as admin_pb
from duetime.events.v1.events_pb2 import DeadLetterEvent
from duetime.jobs.v1 import job_pb2, public_key_service_pb2, public_key_service_pb2_grpc
from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_core.notifications import DEAD_LETTER_KEYS_WINDOW
from duetime_core.records import AttemptOutcome
from duetime_infra.pg.fencing import FencingToken
from duetime_infra.pg.teams.signing_keys import RETIRED_PUBLISHED
from duetime_infra.signing import ATTEMPT_CLAIM, RUN_KEY_CLAIM
from duetime_scheduler.maintenance import PartitionMaintenance
from duetime_worker.attempt.scheduler_client import fetch_from
from duetime_worker.attempt.wire import target_run
from duetime_worker.intake.dispatch import Dispatch
from duetime_worker.notify.notifier import Delivery, Notifier, NotifySettings
from duetime_worker.notify.wire import dead_letter_of
from duetime_worker.targets.container.launcher import DisabledLauncher
from duetime_worker.targets.http.allow_list import TargetPolicy
from duetime_worker.targets.http.caller import HttpCaller
from duetime_worker.targets.http.signed_ahead import AHEAD_FRESH_SECONDS
from duetime_worker.targets.http.signer import CallSigner
from duetime_worker.targets.http.team_keys import FetchedKeys
from duetime_worker.targets.run import TargetRun
from testkit.api import ApiClient, RpcFailure, failure, running_api
from testkit.executor import worker_machinery
from testkit.http_target import Behaviour, HttpTarget, http_target
from testkit.polling import eventually
from testkit.worker_api import (
    WorkerClient,
    create_job,
    job_message,
    running_worker_api,
    trigger,
)

pytestmark = pytest.mark.timeout(60)

ISSUER = "https://duetime.test"
JOB_ID = "0b7e6f0e-0000-4000-8000-000000000001"
RUN_KEY = f"{JOB_ID}/2026-12-06T13:00:00Z"
BODY = b'{"report": "daily"}'
BOTH = job_pb2.CALL_SIGNING_WEBHOOK_AND_ID_TOKEN
WORKER = "w-1"


@pytest.fixture
async def servers(db_dsn: str) -> AsyncIterator[tuple[ApiClient, WorkerClient]]:
    async with running_api(db_dsn) as api, running_worker_api(db_dsn) as worker:
        yield api, worker


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with http_target() as server:
        yield server


@dataclass(frozen=True)
class Held:
    """A run of ``team`` whose open attempt is worker ``WORKER``'s: what entitles the worker to
    the team's keys."""

    team: str
    run_id: str


async def hold(api: ApiClient, worker: WorkerClient, request_id: str = "held") -> Held:
    """A run of ``api.team`` triggered and started by ``WORKER``."""
    run_id = await trigger(api, await create_job(api), request_id)
    await worker.start(run_id, worker=WORKER)
    return Held(api.team, str(run_id))


@pytest.fixture
async def held(servers: tuple[ApiClient, WorkerClient]) -> Held:
    return await hold(*servers)


def run_spec(
    url: str, held: Held, signing: int = BOTH, audience: str = "", job_id: str = JOB_ID
) -> pb.RunSpec:
    """The spec of a call to ``url`` for the held run, signed as ``signing`` says, as a start
    answers it."""
    http = job_pb2.HttpTarget(url=url, body=BODY, token_audience=audience)
    http.signing = signing  # type: ignore[assignment]
    return pb.RunSpec(
        run_id=held.run_id,
        job_id=job_id,
        team=held.team,
        idempotency_key=RUN_KEY,
        target=job_pb2.Target(http=http),
    )


def run(
    url: str, held: Held, signing: int = BOTH, audience: str = "", job_id: str = JOB_ID
) -> TargetRun:
    """``run_spec``'s call, as the worker reads it from its start."""
    return target_run(run_spec(url, held, signing, audience, job_id))


@asynccontextmanager
async def caller(
    worker: WorkerClient,
    wall: Callable[[], float] = time.time,
    per_host: int = 0,
    fetched: list[str] | None = None,
    keep: float = 0,
) -> AsyncIterator[HttpCaller]:
    """An HTTP caller that signs with keys fetched from ``worker``'s WorkerService, kept for
    ``keep`` seconds (by default no time at all: each call sees the keys as they are),
    ``per_host`` calls to a host at once (0: no limit); each fetch's run id is appended to
    ``fetched``."""
    fetch = fetch_from(worker.stub, worker.auth(), WORKER)

    async def counted(team: str, run_id: str) -> FetchedKeys:
        if fetched is not None:
            fetched.append(run_id)
        return await fetch(team, run_id)

    signer = CallSigner(counted, ISSUER, keep=keep, wall=wall)
    policy = TargetPolicy.parse(["127.0.0.1"])
    http = HttpCaller(policy, connections_per_host=per_host, signer=signer)
    await http.start()
    try:
        yield http
    finally:
        await http.close()


async def add_key(api: ApiClient, team: str) -> admin_pb.AddSigningKeyResponse:
    return await api.admin.AddSigningKey(
        admin_pb.AddSigningKeyRequest(parent=f"teams/{team}"), metadata=api.auth(api.operator_token)
    )


async def jwks(api: ApiClient, team: str) -> dict[str, Any]:
    """The team's JWKS as anyone fetches it: no token."""
    async with aio.insecure_channel(api.address) as channel:
        stub = public_key_service_pb2_grpc.PublicKeyServiceStub(channel)
        answer = await stub.GetJwks(public_key_service_pb2.GetJwksRequest(name=f"teams/{team}"))
    return MessageToDict(answer, preserving_proto_field_name=True)


async def keys_for(
    worker: WorkerClient, held: Held, worker_id: str = WORKER, team: str = ""
) -> pb.GetSigningKeysResponse:
    """The keys of ``team`` (by default the held run's) as ``worker_id`` asks for them, naming
    the held run."""
    request = pb.GetSigningKeysRequest(
        team=team or held.team, run_id=held.run_id, worker_id=worker_id
    )
    answer: pb.GetSigningKeysResponse = await worker.stub.GetSigningKeys(
        request, metadata=worker.auth()
    )
    return answer


def lower(headers: dict[str, str]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


def token_of(headers: dict[str, str]) -> str:
    scheme, _, token = lower(headers)["authorization"].partition(" ")
    assert scheme == "Bearer"
    return token


def verify_token(headers: dict[str, str], keys: dict[str, Any], audience: str) -> dict[str, Any]:
    token = token_of(headers)
    key = jwt.PyJWKSet.from_dict(keys)[jwt.get_unverified_header(token)["kid"]]
    claims: dict[str, Any] = jwt.decode(
        token,
        key,
        algorithms=["ES256"],
        audience=audience,
        issuer=ISSUER,
        options={"require": ["exp", "iat", "iss", "aud", "sub"]},
    )
    return claims


async def test_a_target_verifies_both_signatures_of_a_call(
    servers: tuple[ApiClient, WorkerClient],
    target: HttpTarget,
    held: Held,
) -> None:
    api, worker = servers
    added = await add_key(api, api.team)
    url = target.url("/hook")
    async with caller(worker) as http:
        outcome = await http.call(run(url, held), 2, 5)
    assert outcome.result == AttemptOutcome.SUCCEEDED
    (call,) = target.calls
    assert call.body == BODY
    assert Webhook(added.webhook_secret).verify(call.body, call.headers) == {"report": "daily"}
    assert lower(call.headers)["webhook-id"] == RUN_KEY
    claims = verify_token(call.headers, await jwks(api, api.team), url)
    assert claims["sub"] == f"teams/{api.team}/jobs/{JOB_ID}"
    assert claims[RUN_KEY_CLAIM] == RUN_KEY
    assert claims[ATTEMPT_CLAIM] == 2
    assert 0 < claims["exp"] - time.time() <= 300
    # Refused: a body changed on the way, a token meant for another audience, another team's
    # keys.
    with pytest.raises(WebhookVerificationError):
        Webhook(added.webhook_secret).verify(call.body + b"!", call.headers)
    with pytest.raises(jwt.InvalidAudienceError):
        verify_token(call.headers, await jwks(api, api.team), "https://elsewhere.test/")
    other = await add_key(api, api.other_team)
    with pytest.raises(WebhookVerificationError):
        Webhook(other.webhook_secret).verify(call.body, call.headers)
    with pytest.raises(KeyError):
        verify_token(call.headers, await jwks(api, api.other_team), url)


async def test_an_expired_token_is_refused(
    servers: tuple[ApiClient, WorkerClient],
    target: HttpTarget,
    held: Held,
) -> None:
    api, worker = servers
    await add_key(api, api.team)
    audience = "https://target.test/"
    async with caller(worker, wall=lambda: time.time() - 600) as http:
        await http.call(run(target.url("/late"), held, audience=audience), 1, 5)
    (call,) = target.calls
    with pytest.raises(jwt.ExpiredSignatureError):
        verify_token(call.headers, await jwks(api, api.team), audience)


async def test_a_rotation_keeps_every_call_verifiable(
    servers: tuple[ApiClient, WorkerClient],
    target: HttpTarget,
    held: Held,
) -> None:
    api, worker = servers
    old = await add_key(api, api.team)
    new = await add_key(api, api.team)
    third = await failure(add_key(api, api.team))
    assert (third.code, third.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "SIGNING_KEYS_FULL")
    url = target.url("/rotating")
    async with caller(worker) as http:
        await http.call(run(url, held), 1, 5)
        during = target.calls[-1]
        # Both secrets verify; the token is signed by the older key, and both are listed.
        assert len(lower(during.headers)["webhook-signature"].split(" ")) == 2
        for added in (old, new):
            assert Webhook(added.webhook_secret).verify(during.body, during.headers)
        keys = await jwks(api, api.team)
        assert [k["kid"] for k in keys["keys"]] == [
            old.signing_key.key_id,
            new.signing_key.key_id,
        ]
        assert jwt.get_unverified_header(token_of(during.headers))["kid"] == (
            old.signing_key.key_id
        )
        assert verify_token(during.headers, keys, url)["sub"]

        await api.admin.RetireSigningKey(
            admin_pb.RetireSigningKeyRequest(name=old.signing_key.name),
            metadata=api.auth(api.operator_token),
        )
        await http.call(run(url, held), 2, 5)
        after = target.calls[-1]
    assert Webhook(new.webhook_secret).verify(after.body, after.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(old.webhook_secret).verify(after.body, after.headers)
    keys = await jwks(api, api.team)
    # The retired key's public half is still served, for tokens minted just before.
    assert len(keys["keys"]) == 2
    assert verify_token(during.headers, keys, url)["duetime_attempt"] == 1
    assert jwt.get_unverified_header(token_of(after.headers))["kid"] == (new.signing_key.key_id)
    assert verify_token(after.headers, keys, url)["duetime_attempt"] == 2
    listed = await api.admin.ListSigningKeys(
        admin_pb.ListSigningKeysRequest(parent=f"teams/{api.team}"),
        metadata=api.auth(api.operator_token),
    )
    assert [k.HasField("retire_time") for k in listed.signing_keys] == [True, False]


async def test_a_call_waiting_for_a_connection_is_signed_when_it_gets_one(
    servers: tuple[ApiClient, WorkerClient],
    target: HttpTarget,
    held: Held,
) -> None:
    api, worker = servers
    await add_key(api, api.team)
    hold = asyncio.Event()
    url = target.on("/one-at-a-time", Behaviour(slow_first=1, hold=hold))
    spec = run(url, held, job_pb2.CALL_SIGNING_WEBHOOK)
    # The wall clock moves on when the first call is answered, as the second gets its turn.
    async with caller(worker, lambda: 2000.0 if hold.is_set() else 1000.0, per_host=1) as http:
        first = asyncio.create_task(http.call(spec, 1, 5))
        await eventually(lambda: len(target.calls) == 1, 10, "the first call holds the host")
        second = asyncio.create_task(http.call(spec, 2, 5))
        gates = http._hosts.gates.values()  # the per-host limits' gates
        await eventually(lambda: any(g.waiting for g in gates), 10, "the second waits its turn")
        hold.set()
        outcomes = [await first, await second]
    assert [o.result for o in outcomes] == [AttemptOutcome.SUCCEEDED] * 2
    stamps = [lower(c.headers)["webhook-timestamp"] for c in target.calls]
    assert stamps == ["1000", "2000"]


def made_at(headers: dict[str, str]) -> int:
    """When a call's signatures were made: its webhook timestamp, which its token's ``iat``
    repeats."""
    stamp = int(lower(headers)["webhook-timestamp"])
    claims = jwt.decode(token_of(headers), options={"verify_signature": False})
    assert claims["iat"] == stamp
    return stamp


async def call_started_ahead(
    api: ApiClient, worker: WorkerClient, target: HttpTarget, wall: Callable[[], float]
) -> tuple[str, float, dict[str, str]]:
    """A run of a job signed both ways, due 4 s from now, started ahead by an executor that
    signs with ``wall``'s clock: its target's URL, when its call came (the wall clock) and the
    headers it came with."""
    job = job_message()
    http = job.target.http
    http.url, http.body, http.signing = target.url("/ahead"), BODY, BOTH
    http.headers.clear()
    job_id = (await create_job(api, job)).job_id
    effective = await worker.now() + timedelta(seconds=4)
    run_id = await worker.queue_scheduled_run(job_id, effective)
    signer = CallSigner(fetch_from(worker.stub, worker.auth(), WORKER), ISSUER, wall=wall)
    async with worker_machinery(worker, WORKER, signer) as machinery:
        executor = machinery.executor(DisabledLauncher(), WORKER, early=10)
        due = (effective - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) * 1000
        dispatch = Dispatch(run_id=str(run_id), not_before=due)
        await asyncio.wait_for(executor.process(dispatch, "d-1", lambda: None), 20)
    (attempt,) = await worker.attempts(run_id)
    assert (attempt["early"], attempt["outcome"]) == (True, "SUCCEEDED")
    (call,) = target.calls
    assert call.body == BODY
    return http.url, call.time.timestamp(), call.headers


async def test_a_call_started_ahead_is_signed_ahead_and_verifies_at_its_target(
    servers: tuple[ApiClient, WorkerClient], target: HttpTarget
) -> None:
    api, worker = servers
    added = await add_key(api, api.team)
    url, called, headers = await call_started_ahead(api, worker, target, time.time)
    # Signed as the attempt started, seconds before its call, not at its instant.
    assert 3 <= called - made_at(headers) <= AHEAD_FRESH_SECONDS
    assert Webhook(added.webhook_secret).verify(BODY, headers) == {"report": "daily"}
    assert verify_token(headers, await jwks(api, api.team), url)[ATTEMPT_CLAIM] == 1


async def test_a_call_whose_signatures_made_ahead_went_stale_is_signed_at_its_send(
    servers: tuple[ApiClient, WorkerClient], target: HttpTarget
) -> None:
    api, worker = servers
    added = await add_key(api, api.team)
    walls = [time.time() - AHEAD_FRESH_SECONDS - 5]  # the first signatures: made "long ago"

    def wall() -> float:
        return walls.pop() if walls else time.time()

    url, called, headers = await call_started_ahead(api, worker, target, wall)
    assert walls == []  # signed ahead, with the stale time
    assert abs(called - made_at(headers)) <= 1.5  # signed again at its send
    assert Webhook(added.webhook_secret).verify(BODY, headers) == {"report": "daily"}
    assert verify_token(headers, await jwks(api, api.team), url)[ATTEMPT_CLAIM] == 1


async def test_a_call_that_must_be_signed_without_a_key_is_not_sent(
    servers: tuple[ApiClient, WorkerClient],
    target: HttpTarget,
    held: Held,
) -> None:
    _, worker = servers
    async with caller(worker) as http:
        refused = await http.call(run(target.url("/keyless"), held), 1, 5)
        unsigned = await http.call(
            run(target.url("/default"), held, signing=job_pb2.CALL_SIGNING_UNSPECIFIED), 1, 5
        )
    assert refused.result == AttemptOutcome.FAILED
    assert refused.retryable  # a key added lets its next attempt through
    assert "no active signing key" in refused.error
    assert unsigned.result == AttemptOutcome.SUCCEEDED
    (call,) = target.calls
    assert call.path == "/default"
    assert "webhook-signature" not in lower(call.headers)


async def test_no_secret_is_readable_in_the_database(
    servers: tuple[ApiClient, WorkerClient],
) -> None:
    api, worker = servers
    added = await add_key(api, api.team)
    opened = await keys_for(worker, await hold(api, worker))
    (key,) = opened.keys
    assert Webhook(added.webhook_secret)  # the secret the team was given is the one stored
    conn = await asyncpg.connect(api.dsn)
    try:
        rows = await conn.fetch("SELECT * FROM team_signing_keys")
    finally:
        await conn.close()
    stored = b"".join(
        v if isinstance(v, bytes) else str(v).encode() for row in rows for v in row.values()
    )
    assert key.webhook_secret not in stored
    assert added.webhook_secret.encode() not in stored
    assert key.token_private_key[-32:] not in stored  # the private scalar's bytes
    assert key.token_private_key not in stored


async def test_the_team_default_signs_the_jobs_that_do_not_say(
    servers: tuple[ApiClient, WorkerClient],
    target: HttpTarget,
    held: Held,
) -> None:
    api, worker = servers
    added = await add_key(api, api.team)
    team = admin_pb.Team(
        name=f"teams/{api.team}", default_call_signing=job_pb2.CALL_SIGNING_WEBHOOK
    )
    updated = await api.admin.UpdateTeam(
        admin_pb.UpdateTeamRequest(
            team=team, update_mask=FieldMask(paths=["default_call_signing"])
        ),
        metadata=api.auth(api.operator_token),
    )
    assert updated.team.default_call_signing == job_pb2.CALL_SIGNING_WEBHOOK
    unspecified = job_pb2.CALL_SIGNING_UNSPECIFIED
    async with caller(worker) as http:
        await http.call(run(target.url("/default"), held, signing=unspecified), 1, 5)
        await http.call(run(target.url("/off"), held, signing=job_pb2.CALL_SIGNING_OFF), 1, 5)
    signed, unsigned = target.calls
    assert Webhook(added.webhook_secret).verify(signed.body, signed.headers)
    assert "authorization" not in lower(signed.headers)
    assert "webhook-signature" not in lower(unsigned.headers)
    bad = await failure(
        api.admin.UpdateTeam(
            admin_pb.UpdateTeamRequest(
                team=admin_pb.Team(name=f"teams/{api.team}", default_call_signing=42),  # type: ignore[arg-type]
                update_mask=FieldMask(paths=["default_call_signing"]),
            ),
            metadata=api.auth(api.operator_token),
        )
    )
    assert (bad.code, list(bad.fields)) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        ["team.default_call_signing"],
    )


async def test_a_dead_letter_notification_is_signed_as_the_team_default_says(
    servers: tuple[ApiClient, WorkerClient], target: HttpTarget
) -> None:
    api, worker = servers
    added = await add_key(api, api.team)
    team = admin_pb.Team(name=f"teams/{api.team}", default_call_signing=BOTH)
    await api.admin.UpdateTeam(
        admin_pb.UpdateTeamRequest(
            team=team, update_mask=FieldMask(paths=["default_call_signing"])
        ),
        metadata=api.auth(api.operator_token),
    )
    url = target.url("/dead-letters")
    dead = await dead_letter(api, worker)
    event = DeadLetterEvent(
        run_id=dead.run_id,
        job_id=JOB_ID,
        team=api.team,
        job_name=f"teams/{api.team}/jobs/{JOB_ID}",
        idempotency_key=RUN_KEY,
        attempt=3,
        notification_url=url,
    )
    async with caller(worker) as http:
        assert (
            await Notifier(http, NotifySettings()).deliver(dead_letter_of(event))
            == Delivery.DELIVERED
        )
    (call,) = target.calls
    assert Webhook(added.webhook_secret).verify(call.body, call.headers)["runId"] == event.run_id
    claims = verify_token(call.headers, await jwks(api, api.team), url)
    assert claims["sub"] == event.job_name
    assert claims[ATTEMPT_CLAIM] == 3


async def dead_letter(api: ApiClient, worker: WorkerClient, request_id: str = "dead") -> Held:
    """A run of ``api.team`` dead-lettered: its one attempt failed for good."""
    dead = await hold(api, worker, request_id)
    await worker.complete(dead.run_id, 1, pb.ATTEMPT_RESULT_FAILED, retryable=False, worker=WORKER)
    assert (await worker.run_row(dead.run_id))["state"] == "DEAD_LETTERED"
    return dead


async def test_a_worker_gets_a_teams_keys_only_for_a_run_of_the_team_it_holds(
    servers: tuple[ApiClient, WorkerClient], caplog: pytest.LogCaptureFixture
) -> None:
    api, worker = servers
    key_id = (await add_key(api, api.team)).signing_key.key_id
    await add_key(api, api.other_team)
    held = await hold(api, worker)
    caplog.set_level(logging.INFO, "duetime_scheduler.worker_servicer")
    assert [k.key_id for k in (await keys_for(worker, held)).keys] == [key_id]
    (served,) = [r for r in caplog.records if r.__dict__.get("action") == "signing_keys_served"]
    facts = {k: served.__dict__[k] for k in ("worker_id", "team", "run_id", "key_ids")}
    assert facts == {
        "worker_id": WORKER,
        "team": api.team,
        "run_id": held.run_id,
        "key_ids": [key_id],
    }
    queued = Held(api.team, str(await trigger(api, await create_job(api), "queued")))
    unknown = Held(api.team, "00000000-0000-4000-8000-00000000dead")
    refusals = {
        "another worker": keys_for(worker, held, worker_id="w-2"),
        "another team": keys_for(worker, held, team=api.other_team),
        "no attempt": keys_for(worker, queued),
        "no such run": keys_for(worker, unknown),
    }
    for case, asked in refusals.items():
        refused = await failure(asked)
        assert (refused.code, refused.reason) == (
            grpc.StatusCode.PERMISSION_DENIED,
            "KEYS_NOT_HELD",
        ), case
    assert "not worker 'w-2'" in (await failure(keys_for(worker, held, worker_id="w-2"))).message
    await worker.complete(held.run_id, 1, worker=WORKER)
    ended = await failure(keys_for(worker, held))
    assert "no open attempt (it is SUCCEEDED)" in ended.message
    # A run started ahead of its time (its call waits for it) holds the keys for its warm-up.
    job = await create_job(api)
    ahead = await worker.queue_scheduled_run(job.job_id, await worker.now() + timedelta(seconds=20))
    early = await worker.stub.StartAttempt(
        pb.StartAttemptRequest(run_id=str(ahead), delivery_id="d-e", worker_id=WORKER, early=True),
        metadata=worker.auth(),
    )
    assert (early.decision, early.HasField("call_time")) == (pb.START_DECISION_STARTED, True)
    served_ahead = await keys_for(worker, Held(api.team, str(ahead)))
    assert [k.key_id for k in served_ahead.keys] == [key_id]
    # A dead-lettered run's notification is signed by whichever worker delivers it.
    dead = await dead_letter(api, worker)
    assert [k.key_id for k in (await keys_for(worker, dead, worker_id="w-9")).keys] == [key_id]
    refused_logs = [r for r in caplog.records if r.__dict__.get("action") == "signing_keys_refused"]
    assert len(refused_logs) == 6
    assert all("secret" not in r.getMessage() for r in caplog.records)


async def dead_lettered_ago(api: ApiClient, worker: WorkerClient, ago: timedelta) -> Held:
    """A run of ``api.team`` dead-lettered ``ago`` before now: its recorded time moved back,
    rather than waited for."""
    dead = await dead_letter(api, worker)
    moved = await worker.db.execute(
        "UPDATE runs SET update_time = update_time - $2::interval WHERE run_id = $1",
        uuid.UUID(dead.run_id),
        ago,
    )
    assert moved == "UPDATE 1"
    return dead


async def test_a_run_dead_lettered_within_the_window_serves_its_teams_keys(
    servers: tuple[ApiClient, WorkerClient],
) -> None:
    api, worker = servers
    key_id = (await add_key(api, api.team)).signing_key.key_id
    dead = await dead_lettered_ago(api, worker, DEAD_LETTER_KEYS_WINDOW - timedelta(minutes=1))
    # Any worker's notifier may send its notification, until the window ends.
    assert [k.key_id for k in (await keys_for(worker, dead, worker_id="w-9")).keys] == [key_id]


async def test_a_run_dead_lettered_past_the_window_serves_no_keys(
    servers: tuple[ApiClient, WorkerClient], caplog: pytest.LogCaptureFixture
) -> None:
    api, worker = servers
    await add_key(api, api.team)
    dead = await dead_lettered_ago(api, worker, DEAD_LETTER_KEYS_WINDOW + timedelta(minutes=1))
    caplog.set_level(logging.INFO, "duetime_scheduler.worker_servicer")
    refused = await failure(keys_for(worker, dead, worker_id="w-9"))
    assert (refused.code, refused.reason) == (grpc.StatusCode.PERMISSION_DENIED, "KEYS_NOT_HELD")
    assert "dead-lettered too long ago" in refused.message
    dead_at = (await worker.run_row(dead.run_id))["update_time"]
    assert dead_at.isoformat() in refused.message
    (logged,) = [r for r in caplog.records if r.__dict__.get("action") == "signing_keys_refused"]
    assert logged.__dict__["run_id"] == dead.run_id


async def dead_letter_event(worker: WorkerClient, dead: Held, url: str) -> DeadLetterEvent:
    """The event the dead-lettering wrote to the outbox, sent to ``url``."""
    payload = await worker.db.fetchval(
        "SELECT payload FROM outbox WHERE run_id = $1 AND topic = 'duetime.deadletter'",
        uuid.UUID(dead.run_id),
    )
    event = DeadLetterEvent.FromString(payload)
    event.notification_url = url
    return event


async def test_a_notification_fetches_keys_only_when_its_team_signs(
    servers: tuple[ApiClient, WorkerClient], target: HttpTarget
) -> None:
    api, worker = servers
    added = await add_key(api, api.team)
    fetched: list[str] = []
    quiet = await dead_letter_event(
        worker, await dead_letter(api, worker, "off"), target.url("/off")
    )
    assert quiet.notification_signing == job_pb2.CALL_SIGNING_OFF
    await set_default(api, job_pb2.CALL_SIGNING_WEBHOOK)
    signs = await dead_letter_event(worker, await dead_letter(api, worker, "on"), target.url("/on"))
    assert signs.notification_signing == job_pb2.CALL_SIGNING_WEBHOOK
    async with caller(worker, fetched=fetched) as http:
        notifier = Notifier(http, NotifySettings())
        assert await notifier.deliver(dead_letter_of(quiet)) == Delivery.DELIVERED
        assert fetched == []  # the team did not sign: no keys fetched
        assert await notifier.deliver(dead_letter_of(signs)) == Delivery.DELIVERED
    assert fetched == [signs.run_id]
    unsigned, signed = target.calls
    assert "webhook-signature" not in lower(unsigned.headers)
    assert b"notificationSigning" not in signed.body  # how it is signed is not the body's
    assert Webhook(added.webhook_secret).verify(signed.body, signed.headers)["runId"] == (
        signs.run_id
    )


async def test_a_notification_whose_keys_are_refused_is_rejected_at_once_and_logged(
    servers: tuple[ApiClient, WorkerClient],
    target: HttpTarget,
    caplog: pytest.LogCaptureFixture,
) -> None:
    api, worker = servers
    await add_key(api, api.team)
    await set_default(api, job_pb2.CALL_SIGNING_WEBHOOK)
    dead = await dead_lettered_ago(api, worker, DEAD_LETTER_KEYS_WINDOW + timedelta(minutes=1))
    event = await dead_letter_event(worker, dead, target.url("/late"))
    fetched: list[str] = []
    caplog.set_level(logging.INFO, "duetime_worker.notify.notifier")
    async with caller(worker, fetched=fetched) as http:
        # Retried, the refusal would last the give-up time and end ABANDONED.
        notifier = Notifier(http, NotifySettings(give_up_after=5))
        assert await notifier.deliver(dead_letter_of(event)) == Delivery.REJECTED
    assert fetched == [event.run_id]  # refused once, not asked again
    assert target.calls == []
    logged = [r for r in caplog.records if r.__dict__.get("action") == "notification_rejected"]
    (rejected,) = logged
    assert rejected.levelno == logging.ERROR
    assert "dead-lettered too long ago" in rejected.__dict__["error"]
    assert rejected.__dict__["run_id"] == event.run_id


async def set_default(api: ApiClient, signing: int) -> None:
    team = admin_pb.Team(name=f"teams/{api.team}", default_call_signing=signing)  # type: ignore[arg-type]
    await api.admin.UpdateTeam(
        admin_pb.UpdateTeamRequest(
            team=team, update_mask=FieldMask(paths=["default_call_signing"])
        ),
        metadata=api.auth(api.operator_token),
    )


async def test_a_run_that_follows_an_off_default_says_off_so_needs_no_key(
    servers: tuple[ApiClient, WorkerClient],
) -> None:
    api, worker = servers
    job = await create_job(api)
    alone = await worker.start(await trigger(api, job, "r1"))
    batch = await worker.stub.StartAttempts(
        pb.StartAttemptsRequest(
            starts=[
                pb.StartAttemptRequest(
                    run_id=str(await trigger(api, job, "r2")), delivery_id="d", worker_id="w"
                )
            ]
        ),
        metadata=worker.auth(),
    )
    assert alone.run.target.http.signing == job_pb2.CALL_SIGNING_OFF
    assert batch.results[0].response.run.target.http.signing == job_pb2.CALL_SIGNING_OFF
    await add_key(api, api.team)
    await set_default(api, job_pb2.CALL_SIGNING_WEBHOOK)
    signed = await worker.start(await trigger(api, job, "r3"))
    # A default that signs is the worker's to read with the keys: the job did not ask.
    assert signed.run.target.http.signing == job_pb2.CALL_SIGNING_UNSPECIFIED


async def test_a_key_that_does_not_open_leaves_the_default_answered(
    servers: tuple[ApiClient, WorkerClient],
) -> None:
    api, worker = servers
    await add_key(api, api.team)
    await set_default(api, job_pb2.CALL_SIGNING_WEBHOOK)
    await worker.db.execute(
        "UPDATE team_signing_keys SET webhook_secret = '\\x00'::bytea WHERE team_id = $1",
        api.team,
    )
    answer = await keys_for(worker, await hold(api, worker))
    assert (list(answer.keys), answer.default_call_signing) == ([], job_pb2.CALL_SIGNING_WEBHOOK)


def no_key(bad: RpcFailure, field: str) -> bool:
    return (bad.code, bad.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "NO_SIGNING_KEY",
    ) and bad.message.startswith(f"{field}: ")


async def test_no_change_leaves_calls_to_sign_without_a_key(
    servers: tuple[ApiClient, WorkerClient],
) -> None:
    api, _ = servers
    operator = api.auth(api.operator_token)
    new_team = admin_pb.Team(team_id="signs-at-once", default_call_signing=BOTH)
    created = await failure(
        api.admin.CreateTeam(admin_pb.CreateTeamRequest(team=new_team), metadata=operator)
    )
    assert no_key(created, "team.default_call_signing")
    assert no_key(await failure(set_default(api, BOTH)), "team.default_call_signing")
    signing_job = job_message()
    signing_job.target.http.ClearField("headers")
    signing_job.target.http.signing = job_pb2.CALL_SIGNING_WEBHOOK
    assert no_key(await failure(create_job(api, signing_job)), "job.target.http.signing")

    key = (await add_key(api, api.team)).signing_key
    await set_default(api, job_pb2.CALL_SIGNING_WEBHOOK)
    retire = admin_pb.RetireSigningKeyRequest(name=key.name)
    assert no_key(await failure(api.admin.RetireSigningKey(retire, metadata=operator)), "name")
    await set_default(api, job_pb2.CALL_SIGNING_OFF)
    await create_job(api, signing_job)
    assert no_key(await failure(api.admin.RetireSigningKey(retire, metadata=operator)), "name")
    second = (await add_key(api, api.team)).signing_key
    await api.admin.RetireSigningKey(retire, metadata=operator)  # not the last
    assert second.name != key.name


async def test_a_teams_jwks_is_kept_and_forgotten_when_its_keys_change_here(
    servers: tuple[ApiClient, WorkerClient],
) -> None:
    api, worker = servers

    async def kids() -> list[str]:
        return [key["kid"] for key in (await jwks(api, api.team)).get("keys", [])]

    first = (await add_key(api, api.team)).signing_key.key_id
    assert await kids() == [first]
    # Retired long ago behind the api's back (another replica, say): the JWKS kept is served.
    await worker.db.execute(
        "UPDATE team_signing_keys SET retire_time = duetime_now() - interval '1 hour',"
        " sealed_key_id = NULL, webhook_secret = NULL, token_key = NULL WHERE team_id = $1",
        api.team,
    )
    assert await kids() == [first]
    second = (await add_key(api, api.team)).signing_key.key_id  # through this api: seen at once
    assert await kids() == [second]


async def test_bad_names_are_refused_naming_the_field(
    servers: tuple[ApiClient, WorkerClient],
) -> None:
    api, worker = servers
    operator = api.auth(api.operator_token)
    bad_parent = await failure(
        api.admin.AddSigningKey(admin_pb.AddSigningKeyRequest(parent="team-a"), metadata=operator)
    )
    assert (bad_parent.code, list(bad_parent.fields)) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        ["parent"],
    )
    unknown = await failure(add_key(api, "no-such-team"))
    assert (unknown.code, unknown.reason) == (grpc.StatusCode.NOT_FOUND, "TEAM_NOT_FOUND")
    bad_name = await failure(
        api.admin.RetireSigningKey(
            admin_pb.RetireSigningKeyRequest(name=f"teams/{api.team}/keys/x"), metadata=operator
        )
    )
    assert list(bad_name.fields) == ["name"]
    missing = await failure(
        api.admin.RetireSigningKey(
            admin_pb.RetireSigningKeyRequest(name=f"teams/{api.team}/signingKeys/nope"),
            metadata=operator,
        )
    )
    assert (missing.code, missing.reason) == (grpc.StatusCode.NOT_FOUND, "SIGNING_KEY_NOT_FOUND")
    for key_id in ("k" * 33, "Upper", "a-b"):
        bad_key = await failure(
            api.admin.RetireSigningKey(
                admin_pb.RetireSigningKeyRequest(name=f"teams/{api.team}/signingKeys/{key_id}"),
                metadata=operator,
            )
        )
        assert (bad_key.code, list(bad_key.fields)) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            ["name"],
        ), key_id
    async with aio.insecure_channel(api.address) as channel:
        stub = public_key_service_pb2_grpc.PublicKeyServiceStub(channel)
        bad_jwks = await failure(stub.GetJwks(public_key_service_pb2.GetJwksRequest(name="x")))
    assert list(bad_jwks.fields) == ["name"]
    assert await jwks(api, "no-such-team") == {}  # no keys: no hint whether the team exists
    bad_team = await failure(
        worker.stub.GetSigningKeys(
            pb.GetSigningKeysRequest(team="A!", run_id="nope", worker_id=WORKER),
            metadata=worker.auth(),
        )
    )
    assert list(bad_team.fields) == ["team", "run_id"]
    # A worker older than the rule that keys are served for a run it holds names no run.
    unscoped = await failure(
        worker.stub.GetSigningKeys(pb.GetSigningKeysRequest(team=api.team), metadata=worker.auth())
    )
    assert (unscoped.code, list(unscoped.fields)) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        ["run_id", "worker_id"],
    )


async def test_the_retention_pass_deletes_only_keys_retired_long_enough_ago(
    servers: tuple[ApiClient, WorkerClient],
) -> None:
    api, worker = servers
    operator = api.auth(api.operator_token)
    teams = {
        "old": api.team,
        "fresh": api.team,
        "active": api.team,
        "other_old": api.other_team,
        "other_active": api.other_team,
    }
    keys = {}
    for name, team in teams.items():
        keys[name] = (await add_key(api, team)).signing_key
        if "active" not in name:  # retired at once: a team holds at most two active keys
            await api.admin.RetireSigningKey(
                admin_pb.RetireSigningKeyRequest(name=keys[name].name), metadata=operator
            )
    await worker.db.execute(
        "UPDATE team_signing_keys SET retire_time = duetime_now() - $2::interval"
        " WHERE key_id = ANY($1)",
        [keys["old"].key_id, keys["other_old"].key_id],
        RETIRED_PUBLISHED + timedelta(seconds=1),
    )
    await worker.db.execute(
        "UPDATE team_signing_keys SET retire_time = duetime_now() - $2::interval WHERE key_id = $1",
        keys["fresh"].key_id,
        RETIRED_PUBLISHED - timedelta(seconds=5),
    )
    maintenance = PartitionMaintenance(interval_seconds=0)
    for _ in range(2):  # idempotent: the second pass finds nothing more
        assert await maintenance(worker.pool, [FencingToken(0, 0, 1)]) == 1
        left = await worker.db.fetch("SELECT key_id FROM team_signing_keys")
        assert {r["key_id"] for r in left} == {
            keys[name].key_id for name in ("active", "fresh", "other_active")
        }


async def test_a_revoked_key_signs_no_call_started_after_even_from_a_workers_kept_keys(
    servers: tuple[ApiClient, WorkerClient], target: HttpTarget
) -> None:
    api, worker = servers
    operator = api.auth(api.operator_token)
    old, new = await add_key(api, api.team), await add_key(api, api.team)
    signing_job = job_message()
    signing_job.target.http.signing = job_pb2.CALL_SIGNING_WEBHOOK
    job = await create_job(api, signing_job)

    async def started(request_id: str) -> TargetRun:
        """The call of a run started now, as the start answered it, to the test's target."""
        answer = await worker.start(await trigger(api, job, request_id), worker=WORKER)
        spec = run_spec(target.url(f"/{request_id}"), Held(api.team, answer.run.run_id))
        spec.target.http.signing = job_pb2.CALL_SIGNING_WEBHOOK
        spec.signing_keys.CopyFrom(answer.run.signing_keys)
        return target_run(spec)

    def signatures(call: int) -> int:
        return len(lower(target.calls[call].headers)["webhook-signature"].split(" "))

    async with caller(worker, keep=30) as http:  # keys kept 30 s, as a worker keeps them
        before = await started("before")
        assert before.key_ids == (
            old.signing_key.key_id,
            new.signing_key.key_id,
        )
        assert (await http.call(before, 1, 5)).result == AttemptOutcome.SUCCEEDED
        assert signatures(0) == 2
        revoked = await api.admin.RevokeSigningKey(
            admin_pb.RevokeSigningKeyRequest(name=old.signing_key.name), metadata=operator
        )
        assert revoked.signing_key.key_id == old.signing_key.key_id
        after = await started("after")
        assert (await http.call(after, 1, 5)).result == AttemptOutcome.SUCCEEDED
        call = target.calls[1]
        assert signatures(1) == 1
        assert Webhook(new.webhook_secret).verify(call.body, call.headers)
        with pytest.raises(WebhookVerificationError):
            Webhook(old.webhook_secret).verify(call.body, call.headers)
        # Its public key is gone at once (from this API), and so is the key itself.
        kids = [k["kid"] for k in (await jwks(api, api.team))["keys"]]
        assert kids == [new.signing_key.key_id]
        gone = await failure(
            api.admin.RevokeSigningKey(
                admin_pb.RevokeSigningKeyRequest(name=old.signing_key.name), metadata=operator
            )
        )
        assert (gone.code, gone.reason) == (grpc.StatusCode.NOT_FOUND, "SIGNING_KEY_NOT_FOUND")
        # The last key too: a call then waits for a new key rather than use the revoked one.
        await api.admin.RevokeSigningKey(
            admin_pb.RevokeSigningKeyRequest(name=new.signing_key.name), metadata=operator
        )
        keyless = await http.call(await started("keyless"), 1, 5)
    assert (keyless.result, keyless.retryable) == (AttemptOutcome.FAILED, True)
    assert "none of its keys named at the call's start" in keyless.error
    assert len(target.calls) == 2
