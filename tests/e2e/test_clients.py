"""The Go, TypeScript and Java client programs (clients/*) drive the live system: the four
services as processes on a fresh database and a real HTTP target. Each authenticates with a team
token, creates a cron job and an at-time job, reads them back, lists runs, triggers a run and
waits until it SUCCEEDED at the target, and decodes an INVALID_ARGUMENT's BadRequest and an
ABORTED etag mismatch (see docs/clients.md). They speak TLS, verifying the API's certificate
with the CA the services use, and show that an API whose certificate they cannot verify is
refused. The programs build offline from what scripts/tools fetched; a failing one fails the
test with its output.

Each program generates its code from proto/ in its own build, by the recipe docs/clients.md
gives: Go with go generate (buf and its buf.gen.yaml), TypeScript with `npm run build` (buf
generate, then tsc), Java with Maven's protobuf-maven-plugin. The Go program is built as a team
outside this repository would, from copies of proto/ and of its own files only; docs/clients.md's
protoc recipe for Go is run too.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

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
from testkit.live import Live
from testkit.processes import REPO
from testkit.tls import service_client_tls

pytestmark = pytest.mark.timeout(300)

DOC = REPO / "docs" / "clients.md"


PROGRAMS = {
    # GOPROXY=off: the modules, the code generators among them, must already be in the cache
    # (scripts/tools). go generate writes gen/; building ./... compiles every generated
    # package, not only those the program imports.
    "go": Program(
        prepare=lambda scratch: outside_copy(scratch, "go"),
        build=lambda scratch: [
            [go(), "generate", "."],
            [go(), "build", "./..."],
            [go(), "test", "-c", "-o", str(scratch / "client.test"), "."],
        ],
        run=lambda scratch: [str(scratch / "client.test"), "-test.v", "-test.count=1"],
        env=GO_ENV,
    ),
    # npm run build: buf generate into gen/, then tsc into dist/ (package.json).
    "ts": Program(
        prepare=lambda _: CLIENTS / "ts",
        build=lambda _: [[executable("npm"), "run", "build"]],
        run=lambda _: [executable("node"), "--test", "dist/src/client.test.js"],
    ),
    # -o: offline, from what scripts/tools put in ~/.m2. One Maven run generates, compiles and
    # tests (each start of Maven costs seconds).
    "java": Program(
        prepare=lambda _: CLIENTS / "java",
        build=lambda _: [],
        run=lambda _: [executable("mvn"), "-B", "-o", "test"],
    ),
}


@pytest.mark.parametrize("language", sorted(PROGRAMS))
async def test_client_program_drives_the_live_system(
    language: str, live: Live, tmp_path: Path
) -> None:
    system, target = live.system, live.target
    program = PROGRAMS[language]
    directory = program.prepare(tmp_path)
    for command in program.build(tmp_path):
        await run(command, directory, program.env, BUILD_TIMEOUT)
    path = f"/{language}-client"
    # Over TLS as the services serve it: the programs read DUETIME_TLS_CA_FILE and
    # DUETIME_PLAINTEXT from the environment, as the services do.
    tls = service_client_tls(system.common_env)
    env = {
        **program.env,
        "DUETIME_API": system.api_service.address,
        "DUETIME_TOKEN": system.team_token,
        "DUETIME_TARGET_URL": target.on(path, Behaviour()),
        "DUETIME_TLS_CA_FILE": tls.ca_file if tls else "",
        "DUETIME_PLAINTEXT": "" if tls else "grpc",
    }
    output = await run(program.run(tmp_path), directory, env, RUN_TIMEOUT)
    print(output)
    # The run the program saw SUCCEEDED is the one that called the target, once.
    seen = re.search(r"SUCCEEDED after \d+ attempt\(s\), key (\S+)", output)
    assert seen is not None, output
    keys = [call.headers.get("Idempotency-Key") for call in target.calls_to(path)]
    assert "/trigger/" in seen[1]
    assert keys.count(seen[1]) == 1, (keys, output)
    # Over TLS, the program also proved that it verifies the API's certificate.
    assert tls is None or "unverified certificate refused" in output, output


async def test_go_protoc_recipe_builds_the_program(tmp_path: Path) -> None:
    """docs/clients.md's protoc command for Go, with the well-known types grpcio-tools
    carries, gives code the program builds with."""
    directory = outside_copy(tmp_path, "go")
    recipe = re.search(r"<!-- recipe: go-protoc -->\n```sh\n(.*?)```\n", DOC.read_text(), re.S)
    assert recipe is not None, "docs/clients.md has no go-protoc recipe"
    wkt = resources.files("grpc_tools") / "_proto"
    env = {**GO_ENV, "WKT": str(wkt)}
    await run(["bash", "-euo", "pipefail", "-c", recipe[1]], directory, env, BUILD_TIMEOUT)
    assert (directory / "gen" / "duetime" / "jobs" / "v1" / "job_service_grpc.pb.go").exists()
    await run([go(), "vet", "./..."], directory, GO_ENV, BUILD_TIMEOUT)
