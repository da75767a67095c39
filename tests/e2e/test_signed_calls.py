"""Signed calls end to end: an operator adds a team's signing key over HTTP, the team's job
asks for both signatures, the live system (the four services and the gateway, over TLS) calls a
real target, and the verification code docs/clients.md shows, in Python, Go and TypeScript
(clients/python, clients/go, clients/ts), checks what the target received, fetching the team's
JWKS from the gateway: Duetime's calls are verified (a JSON, an empty and a text body; a
verifier's clock a little behind), and a changed body, a token checked after its expiry and a
token for another audience are refused. The team's secret is nowhere in the
database in clear, nor in the Kafka messages that carried the run, nor in the services' logs."""

from __future__ import annotations

import base64
import json
import re
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import jwt
import pytest

from duetime_infra.kafka.topics import DEAD_LETTER_TOPIC, DISPATCH_TOPICS
from testkit.client_programs import (
    BUILD_TIMEOUT,
    CLIENTS,
    GO_ENV,
    RUN_TIMEOUT,
    Program,
    executable,
    go,
    outside_copy,
    run,
)
from testkit.http_target import Behaviour
from testkit.kafka import end_offsets, read_between, shared_bootstrap
from testkit.live import ISSUER, Live
from testkit.polling import eventually
from testkit.processes import REPO
from testkit.system import TEAM
from testkit.tls import service_client_tls

pytestmark = pytest.mark.timeout(300)

AUDIENCE = "https://payments.example/duetime"
BODY = b'{"report": "daily", "currency": "EUR"}'
TOPICS = sorted([*DISPATCH_TOPICS.values(), DEAD_LETTER_TOPIC])


@dataclass(frozen=True)
class Recorded:
    """A call Duetime made, as the target received it, and the team's secret."""

    secret: str
    headers: dict[str, str]
    body: bytes
    jwks_url: str


@pytest.fixture(scope="module")
async def secret(live: Live) -> str:
    """The team's webhook secret: a signing key the operator added, once for the module (a
    team holds two at most)."""
    added = await live.api.ok(
        "POST", f"/v1/admin/teams/{TEAM}/signingKeys", {}, token=live.operator_token
    )
    webhook_secret: str = added["webhookSecret"]
    return webhook_secret


# The calls verified: a JSON body (POST, the default), a GET without a body, a text body.
POSTED = {"body": base64.b64encode(BODY).decode()}
GOT = {"method": "HTTP_METHOD_GET"}
TEXT = {"body": base64.b64encode(b"daily report\nEUR 12.50\n").decode()}


async def signed_call(live: Live, secret: str, path: str, http: dict[str, Any]) -> Recorded:
    """A job that signs both ways, its HTTP target ``http`` besides, triggered over HTTP, and
    its call as the target received it."""
    url = live.target.on(path, Behaviour())
    job = {
        "displayName": "signed",
        "schedule": {"cron": {"expression": "0 0 1 1 *", "timeZone": "UTC"}},
        "target": {
            "http": {
                "url": url,
                "signing": "CALL_SIGNING_WEBHOOK_AND_ID_TOKEN",
                "tokenAudience": AUDIENCE,
                **http,
            }
        },
    }
    created = await live.api.ok(
        "POST", f"/v1/teams/{TEAM}/jobs", job, params={"requestId": uuid.uuid4().hex}
    )
    name = created["job"]["name"]
    await live.api.ok("POST", f"/v1/{name}:trigger", {"requestId": uuid.uuid4().hex})

    async def called() -> bool:
        return bool(live.target.calls_to(path))

    await eventually(called, 60, "the signed job's call reached the target")
    (call,) = live.target.calls_to(path)
    return Recorded(
        secret, call.headers, call.body, f"{live.api.base_url}/v1/teams/{TEAM}/jwks.json"
    )


def cases(posted: Recorded, got: Recorded, text: Recorded) -> dict[str, Any]:
    """What each verifier checks: Duetime's calls as received (a JSON body, checked also by a
    clock behind the worker's; an empty body; a text body), and three that must be refused."""

    def case(
        name: str,
        call: Recorded = posted,
        body: bytes | None = None,
        audience: str = AUDIENCE,
        later: float = 0,
    ) -> Any:
        return {
            "name": name,
            "headers": call.headers,
            "body_base64": base64.b64encode(call.body if body is None else body).decode(),
            "audience": audience,
            "later_seconds": later,
        }

    assert (got.body, text.body) == (b"", b"daily report\nEUR 12.50\n")
    return {
        "secret": posted.secret,
        "jwks_url": posted.jwks_url,
        "issuer": ISSUER,
        "cases": [
            case("genuine"),
            case("clock-behind"),  # its clock is set as the verifier starts (behind())
            case("empty-body", got),
            case("text-body", text),
            case("changed-body", body=posted.body.replace(b"EUR", b"USD")),
            case("expired", later=600),
            case("other-audience", audience="https://elsewhere.example/"),
        ],
    }


def behind(recorded: dict[str, Any]) -> dict[str, Any]:
    """The cases with the clock-behind case's clock, as of now (its verifier starts at once),
    set ``BEHIND`` seconds before its token was minted: a worker's clock ahead of the
    target's."""
    out: dict[str, Any] = json.loads(json.dumps(recorded))
    for case in out["cases"]:
        if case["name"] == "clock-behind":
            headers = {name.lower(): value for name, value in case["headers"].items()}
            token = headers["authorization"].removeprefix("Bearer ")
            iat = jwt.decode(token, options={"verify_signature": False})["iat"]
            case["later_seconds"] = iat - BEHIND - time.time()
    return out


BEHIND = 10

# Each case's outcome, and for a refusal what its reason must name (each library words it
# its own way).
EXPECTED = {
    "genuine": ("verified", ""),
    "clock-behind": ("verified", ""),
    "empty-body": ("verified", ""),
    "text-body": ("verified", ""),
    "changed-body": ("refused", "signature"),
    "expired": ("refused", "exp"),
    "other-audience": ("refused", "aud"),
}


def check_outcomes(output: str) -> None:
    found = {name: (seen, why) for name, seen, why in OUTCOME.findall(output)}
    assert set(found) == set(EXPECTED), output
    for name, (seen, why) in found.items():
        assert seen == EXPECTED[name][0], (name, output)
        assert EXPECTED[name][1] in why.lower(), (name, output)


OUTCOME = re.compile(r"CASE (\S+): (verified|refused)(?:: (.*))?")


VERIFIERS = {
    "python": Program(
        prepare=lambda _: REPO,
        build=lambda _: [],
        run=lambda _: [sys.executable, str(CLIENTS / "python" / "verify_signed_calls.py")],
    ),
    # As tests/e2e/test_clients.py builds the Go program: from copies of proto/ and its files.
    "go": Program(
        prepare=lambda scratch: outside_copy(scratch, "go"),
        build=lambda scratch: [
            [go(), "generate", "."],
            [go(), "test", "-c", "-o", str(scratch / "client.test"), "."],
        ],
        run=lambda scratch: [
            str(scratch / "client.test"),
            "-test.v",
            "-test.count=1",
            "-test.run=TestSignedCalls",
        ],
        env=GO_ENV,
        ca_variable="SSL_CERT_FILE",
    ),
    "ts": Program(
        prepare=lambda _: CLIENTS / "ts",
        build=lambda _: [[executable("npm"), "run", "build"]],
        run=lambda _: [executable("node"), "--test", "dist/src/verify.test.js"],
        ca_variable="NODE_EXTRA_CA_CERTS",
    ),
}


@pytest.fixture(scope="module")
async def recorded(live: Live, secret: str) -> dict[str, Any]:
    return cases(
        await signed_call(live, secret, "/signed", POSTED),
        await signed_call(live, secret, "/signed-get", GOT),
        await signed_call(live, secret, "/signed-text", TEXT),
    )


@pytest.mark.parametrize("language", sorted(VERIFIERS))
async def test_the_documented_verifiers_accept_duetimes_call_and_refuse_the_others(
    language: str, recorded: dict[str, Any], live: Live, tmp_path: Path
) -> None:
    verifier = VERIFIERS[language]
    directory = verifier.prepare(tmp_path)
    env = dict(verifier.env)
    for command in verifier.build(tmp_path):
        await run(command, directory, env, BUILD_TIMEOUT)
    calls = tmp_path / "calls.json"
    calls.write_text(json.dumps(behind(recorded)))
    tls = service_client_tls(live.system.common_env)
    env |= {"DUETIME_SIGNED_CALLS": str(calls)}
    if tls is not None:
        env[verifier.ca_variable] = tls.ca_file
    output = await run(verifier.run(tmp_path), directory, env, RUN_TIMEOUT)
    print(output)
    check_outcomes(output)


async def test_the_secret_is_neither_stored_nor_carried_in_clear(live: Live, secret: str) -> None:
    start = await end_offsets(shared_bootstrap(), TOPICS)
    call = await signed_call(live, secret, "/signed-at-rest", POSTED)
    end = await end_offsets(shared_bootstrap(), TOPICS)
    key = base64.b64decode(call.secret.removeprefix("whsec_"))
    messages = await read_between(shared_bootstrap(), start, end)
    assert messages, "the run's dispatch was read from Kafka"
    carried = b"".join(b"".join([m.key or b"", m.value, *m.headers.values()]) for m in messages)
    assert key not in carried
    assert call.secret.encode() not in carried
    conn = await asyncpg.connect(live.system.db_dsn)
    try:
        dump = await conn.fetchval("SELECT string_agg(t::text, '') FROM team_signing_keys t")
    finally:
        await conn.close()
    assert call.secret not in dump
    assert key.hex() not in dump  # bytea shows as hex
    system = live.system
    services = [system.api_service, system.scheduler, system.relay, *system.workers.values()]
    logged = "\n".join(line for service in services for line in service.output)
    assert '"api serving"' in logged  # the services' output was captured
    assert call.secret not in logged
    assert call.secret.removeprefix("whsec_") not in logged


async def test_a_team_without_keys_serves_an_empty_jwks(live: Live, secret: str) -> None:
    # RFC 7517: a JWK Set has its "keys" member, empty or not; the document is open to anyone.
    assert secret  # the team has a key
    empty = await live.api.ok("GET", "/v1/teams/no-such-team/jwks.json", token="")
    assert empty == {"keys": []}
    answer = await live.api.call("GET", f"/v1/teams/{TEAM}/jwks.json", token="")
    keyed = answer.body
    assert keyed["keys"]
    headers = {name.lower(): value for name, value in answer.headers.items()}
    assert headers["cache-control"] == "public, max-age=30"  # what the api keeps
    assert set(keyed["keys"][0]) == {"kty", "crv", "x", "y", "kid", "use", "alg"}
    posted = await live.api.call("POST", f"/v1/teams/{TEAM}/jwks.json", {}, token="")
    assert posted.status == 404
