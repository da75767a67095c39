"""Duetime's image as docs/deploy.md builds and runs it: `scripts/image build` leaves no image
but the one it tags (no build stage, no image per step, not the image the tag named before),
and the documented `podman run` starts the image on this host as it stands, without the
repository's containers.conf (which names the limits and the runtime for the tests). A cold
machine builds the image's base first (mmdebstrap)."""

from __future__ import annotations

import os
import shlex
import subprocess

import pytest

from testkit.docs import shell_commands
from testkit.podman import require_podman
from testkit.processes import REPO

pytestmark = pytest.mark.timeout(1200)

TAG = "dev"
# The label of the Containerfile's build stage (and of every step's image after it).
BUILD_STAGE = "dev.duetime.stage=build"


def podman(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], capture_output=True, text=True, env=env, timeout=300)


def image_id(reference: str) -> str | None:
    found = podman("image", "inspect", "--format", "{{.Id}}", reference)
    return found.stdout.strip() if found.returncode == 0 else None


def test_a_build_leaves_no_image_but_its_own_and_the_documented_run_works(
    images_built: set[str],
) -> None:
    require_podman()
    image = f"localhost/duetime:{TAG}"
    replaced = image_id(image)
    build = subprocess.run(
        [str(REPO / "scripts" / "image"), "build", TAG],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=1100,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    images_built.add(image)
    stage = podman("images", "--all", "--filter", f"label={BUILD_STAGE}", "--format", "{{.ID}}")
    assert stage.returncode == 0, stage.stderr
    assert stage.stdout.split() == [], "the build stage's images are left"
    # The image the tag named before is gone, unless a container (a demo's pod) still uses it.
    if replaced is not None and replaced != image_id(image):
        users = podman("ps", "--all", "--quiet", "--filter", f"ancestor={replaced}").stdout
        assert users.split() or image_id(replaced) is None, "the replaced image is left"

    (documented,) = [c for c in shell_commands("deploy.md") if c.startswith("podman run ")]
    words = [w.replace("localhost/duetime:0.1.0", image) for w in shlex.split(documented)]
    assert image in words, documented
    host = {k: v for k, v in os.environ.items() if k != "CONTAINERS_CONF"}
    run = podman(*words[1:], env=host)
    assert run.returncode == 0, run.stderr
    assert "Usage: duetime" in run.stdout, run.stdout
