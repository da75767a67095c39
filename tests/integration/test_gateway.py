"""The gateway as a process on its own (no api behind it, or one it cannot reach): Envoy's own
errors are JSON statuses for HTTP callers and gRPC statuses for gRPC-web ones, it serves renewed
certificate files to new connections, it stops cleanly on SIGTERM, and Envoy failing to start
fails the gateway with a clear line."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import socket
import struct
import sys
from pathlib import Path

import aiohttp
import pytest

from testkit.gateway import OPENAPI_FILE, running_gateway
from testkit.polling import eventually
from testkit.tls import Certs, certificate_in, certificate_served, make_certs

pytestmark = pytest.mark.timeout(60)


def closed_port() -> int:
    """A port of 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_an_unreachable_api_is_unavailable_in_each_callers_terms(tmp_path: Path) -> None:
    certs = await make_certs(tmp_path / "certs")
    api = f"127.0.0.1:{closed_port()}"
    async with (
        running_gateway(api, {**certs.env(), "DUETIME_METRICS_ADDRESS": "127.0.0.1:0"}) as gateway,
        aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=certs.client().ssl_context())
        ) as http,
    ):
        base = f"https://{gateway.address}"
        async with http.get(f"{base}/healthz") as health:
            assert health.status == 200
        async with http.get(f"{base}/v1/jobs/some-job") as response:
            assert response.status == 503
            assert response.content_type == "application/json"
            status = await response.json()
        assert status["code"] == 14  # UNAVAILABLE
        assert "upstream connect error" in status["message"]
        async with http.post(
            f"{base}/duetime.jobs.v1.JobService/GetJob",
            data=struct.pack(">BI", 0, 0),
            headers={"Content-Type": "application/grpc-web+proto"},
        ) as web:
            assert web.headers["grpc-status"] == "14"
            assert web.headers["grpc-message"].startswith("upstream connect error")
        # Envoy's statistics for Prometheus, plain HTTP like every service's metrics.
        metrics = next(line for line in gateway.output if line.startswith("DUETIME_METRICS_PORT="))
        async with http.get(f"http://127.0.0.1:{metrics.partition('=')[2]}/metrics") as scraped:
            text = await scraped.text()
        assert 'envoy_http_downstream_rq_xx{envoy_response_code_class="5"' in text
    assert gateway.process.returncode == 0, "\n".join(gateway.output)


async def test_the_gateway_serves_renewed_certificate_files(tmp_path: Path) -> None:
    certs = await make_certs(tmp_path / "certs")
    files = tmp_path / "served"
    files.mkdir()
    for name in ("cert.pem", "key.pem"):
        shutil.copy(certs.directory / name, files / name)
    served = {**certs.env(), **Certs(files).env(), "DUETIME_TLS_CA_FILE": certs.ca}
    async with running_gateway(f"127.0.0.1:{closed_port()}", served) as gateway:
        assert await certificate_served(gateway.port, certs.ca) == certificate_in(
            files / "cert.pem"
        )
        # A renewal lands as deployments write it: each file moved into place.
        await make_certs(certs.directory, renew=True)
        for name in ("key.pem", "cert.pem"):
            shutil.copy(certs.directory / name, files / f"{name}.new")
            os.replace(files / f"{name}.new", files / name)
        renewed = certificate_in(files / "cert.pem")

        async def serves_renewal() -> bool:
            return await certificate_served(gateway.port, certs.ca) == renewed

        await eventually(serves_renewal, 10, "the renewed certificate is served")


async def test_envoy_failing_to_start_fails_the_gateway(tmp_path: Path) -> None:
    certs = await make_certs(tmp_path / "certs")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "duetime_gateway",
            env={
                **os.environ,
                **certs.env(),
                "DUETIME_GATEWAY_ADDRESS": address,
                "DUETIME_API_TARGET": f"127.0.0.1:{closed_port()}",
            },
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await asyncio.wait_for(process.communicate(), 30)
    text = output.decode(errors="replace")
    assert process.returncode == 1, text
    assert "envoy exited with code 1" in text
    assert "DUETIME_GATEWAY_PORT" not in text


async def test_a_rendered_configuration_is_one_envoy_accepts(tmp_path: Path) -> None:
    certs = await make_certs(tmp_path / "certs")
    env = {**os.environ, **certs.env(), "DUETIME_METRICS_ADDRESS": "127.0.0.1:9464"}
    rendered = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "duetime_gateway",
        "render",
        str(tmp_path / "run"),
        env={**env, "DUETIME_GATEWAY_OPENAPI_FILE": str(OPENAPI_FILE)},
        stdout=asyncio.subprocess.PIPE,
    )
    command, _ = await rendered.communicate()
    assert rendered.returncode == 0
    # The printed command, in Envoy's mode that checks a configuration without serving it.
    check = await asyncio.create_subprocess_exec(
        *shlex.split(command.decode()),
        "--mode",
        "validate",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await check.communicate()
    assert check.returncode == 0, output.decode()
    assert output.decode().rstrip().endswith(f"configuration '{tmp_path}/run/envoy.json' OK")


def envoy_of(pid: int) -> int:
    """The gateway's one child process, Envoy."""
    (child,) = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    assert Path(f"/proc/{child}/exe").resolve().name == "envoy"
    return child


async def test_envoy_never_outlives_its_gateway(tmp_path: Path) -> None:
    certs = await make_certs(tmp_path / "certs")
    async with running_gateway(f"127.0.0.1:{closed_port()}", certs.env()) as gateway:
        envoy = envoy_of(gateway.process.pid)
        gateway.process.kill()  # no SIGTERM to act on: the kernel's parent-death signal
        await gateway.process.wait()

        def envoy_gone() -> bool:
            try:
                state = Path(f"/proc/{envoy}/stat").read_text().split(")")[-1].split()[0]
            except FileNotFoundError:
                return True
            return state == "Z"  # ended, waiting for its new parent to reap it

        await eventually(envoy_gone, 10, "envoy ended with its gateway")
