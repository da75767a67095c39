"""Duetime's own image and Kubernetes manifests, run for real: scripts/kube-demo builds the
image with podman, renders the podman-demo overlay with kustomize, migrates a database of its
own with the migration Pod (after the Secret, made out of band, and the config step, which holds
no Secret: docs/deploy.md's order), plays the Deployments with `podman kube play` next to the
local stack, over TLS with the stack's certificates (the api's and the scheduler's exec probes
pass; the worker authenticates with its client certificate, which the scheduler requires), an
HTTP job's runs succeed through the containerised services, and the gateway's pod serves the
job over HTTP/JSON; `down` leaves no pod behind. A cold machine builds the image's base first
(a few minutes: mmdebstrap). The image test builds the same image from the same tree earlier
in a session: then the demo plays that one rather than building it again."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Mapping

import pytest

from testkit.podman import require_podman
from testkit.processes import REPO

pytestmark = pytest.mark.timeout(1200)
IMAGE = "localhost/duetime:dev"


async def script(*args: str, within: float, env: Mapping[str, str] = {}) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        str(REPO / "scripts" / "kube-demo"),
        *args,
        env={**os.environ, **env},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), within)
    assert process.returncode is not None
    return process.returncode, out.decode(errors="replace")


async def demo_pods() -> list[str]:
    process = await asyncio.create_subprocess_exec(
        "podman", "pod", "ps", "--filter", "name=duetime-", "--format", "json",
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, _ = await process.communicate()
    return [pod["Name"] for pod in json.loads(out or b"[]")]


async def test_the_demo_job_succeeds_through_the_services_played_from_the_manifests(
    images_built: set[str],
) -> None:
    require_podman()
    began = time.monotonic()
    built = {"DUETIME_KUBE_DEMO_BUILT": "1"} if IMAGE in images_built else {}
    try:
        code, output = await script(within=1100, env=built)
        print(output[-3000:])
        assert code == 0, output[-5000:]
        assert "done: the runs succeeded through the containerised services" in output
        assert "the scheduler refuses a caller without a client certificate" in output
        # docs/deploy.md's order: the config step leaves the Secret made before it alone.
        config_step = "the config step (-l app.kubernetes.io/component=config): "
        assert f"{config_step}ConfigMap/duetime-config\n" in output, output[-5000:]
        # The CLI in the image lists the job from inside the api's pod.
        cli = output.split("the duetime CLI in the image", 1)[-1]
        assert "kube demo" in cli, output[-3000:]
        succeeded = [line for line in output.splitlines() if "RUN_STATE_SUCCEEDED" in line]
        assert len(succeeded) >= 3, output[-3000:]
        assert all("worker duetime-worker-pod-0" in line for line in succeeded), succeeded
        # The gateway's pod reaches the api's and answers GetJob over HTTP/JSON with the job.
        created = re.search(r"^created (teams/\S+/jobs/\S+)$", output, re.M)
        assert created is not None, output[-3000:]
        http = output.split("the job over HTTP/JSON, through the gateway", 1)[-1]
        assert f"{created[1]} 'kube demo' JOB_STATE_ACTIVE\n" in http, output[-3000:]
        # The migration Pod stays, ended, as a Job's pod does.
        assert sorted(await demo_pods()) == [
            "duetime-api-pod-0",
            "duetime-console-pod-0",
            "duetime-gateway-pod-0",
            "duetime-migrate",
            "duetime-relay-pod-0",
            "duetime-scheduler-pod-0",
            "duetime-worker-pod-0",
        ]
    finally:
        code, output = await script("down", within=120)
    assert code == 0, output
    assert await demo_pods() == []
    print(f"kube demo in {time.monotonic() - began:.1f} s")
