"""Container settings and rules without a runtime: the launcher choice and its settings refused
by name, the image allow-list, the deadline's formats, and which labelled containers a sweep
takes for orphans."""

from __future__ import annotations

import os

import pytest

from duetime_infra.config import ConfigError
from duetime_worker.config import Settings
from duetime_worker.targets.container import orphans
from duetime_worker.targets.container.images import ImagePolicy, registry_of
from duetime_worker.targets.target_deadline import Deadline

BASE = {"DUETIME_WORKER_TOKEN": "dtw_x", "DUETIME_PLAINTEXT": "all"}
PODMAN = {**BASE, "DUETIME_CONTAINER_LAUNCHER": "podman"}


def test_podman_launcher_settings_and_defaults() -> None:
    settings = Settings.from_env(
        {**PODMAN, "DUETIME_CONTAINER_IMAGES": "registry.example.com/a/*, localhost/x:*"}
    )
    assert settings.container_launcher == "podman"
    assert settings.container_images == ("registry.example.com/a/*", "localhost/x:*")
    podman = settings.podman
    assert (podman.command, podman.pull, podman.network) == ("podman", "never", "")
    assert (podman.stop_seconds, podman.sweep_interval, podman.concurrency) == (5, 30, 16)


def test_off_unless_chosen() -> None:
    assert Settings.from_env(BASE).container_launcher == "off"


@pytest.mark.parametrize(
    ("env", "named"),
    [
        (PODMAN, "DUETIME_CONTAINER_IMAGES: required"),
        ({**BASE, "DUETIME_CONTAINER_LAUNCHER": "docker"}, "DUETIME_CONTAINER_LAUNCHER='docker'"),
        ({**BASE, "DUETIME_CONTAINER_LAUNCHER": "local"}, "DUETIME_LOCAL_LAUNCHER_COMMANDS"),
        (
            {
                **PODMAN,
                "DUETIME_CONTAINER_IMAGES": "localhost/*",
                "DUETIME_PODMAN_PULL": "sometimes",
            },
            "DUETIME_PODMAN_PULL='sometimes'",
        ),
        (
            {
                **PODMAN,
                "DUETIME_CONTAINER_IMAGES": "localhost/*",
                "DUETIME_PODMAN_STOP_SECONDS": "90",
            },
            "DUETIME_PODMAN_STOP_SECONDS=90",
        ),
    ],
)
def test_bad_launcher_settings_are_refused_by_name(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(env)
    assert named in str(raised.value), str(raised.value)


def test_image_allow_list() -> None:
    policy = ImagePolicy.parse(["registry.example.com/team-a/*", "localhost/tools:1"])
    assert policy.refusal("registry.example.com/team-a/job:2") is None
    assert policy.refusal("registry.example.com/team-a/deep/job@sha256:" + "a" * 64) is None
    assert policy.refusal("localhost/tools:1") is None
    assert "not permitted" in str(policy.refusal("registry.example.com/team-b/job:2"))
    assert "not permitted" in str(policy.refusal("registry.example.com.evil/team-a/x:1"))
    assert "not permitted" in str(policy.refusal("localhost/tools:2"))
    assert "must name its registry" in str(policy.refusal("busybox"))
    assert "must name its registry" in str(policy.refusal("team-a/job:1"))
    assert "not a valid image reference" in str(policy.refusal("--privileged"))
    assert "not a valid image reference" in str(policy.refusal("localhost/a b"))


def test_registry_of_a_reference() -> None:
    assert registry_of("registry.example.com:5000/a/b:1") == "registry.example.com:5000"
    assert registry_of("localhost/a") == "localhost"
    assert registry_of("library/busybox") is None
    assert registry_of("busybox:1") is None


def test_deadline_formats() -> None:
    deadline = Deadline.after(30, now=1_796_000_000.2504)
    assert deadline.rfc3339 == "2026-11-30T00:53:50.25Z"
    assert deadline.seconds_left(now=1_796_000_000.2504) == "30.000"
    assert deadline.seconds_left(now=1_796_000_100.0) == "0.000"
    assert Deadline(1_796_000_000.0).rfc3339 == "2026-11-30T00:53:20Z"


def labels_of(owner: orphans.Owner, remove_after: float = 2e9) -> dict[str, str]:
    return owner.labels("run-1", 2, remove_after)


def test_a_container_whose_owner_process_is_gone_is_an_orphan() -> None:
    me = orphans.Owner.of_this_process("w1")
    parent = os.getppid()
    live = orphans.Owner("w0", me.boot, me.pid_namespace, parent, str(orphans.start_time(parent)))
    # Its own, and a live owner's it can see, never: not even long past their deadline.
    assert me.orphan_reason(labels_of(me, remove_after=0), 1e9, at_start=True) is None
    assert me.orphan_reason(labels_of(live, remove_after=0), 1e9, at_start=True) is None
    # The parent's pid with another start time: the pid was reused by another process.
    reused = orphans.Owner(
        "w0", me.boot, me.pid_namespace, parent, str(int(orphans.start_time(parent) or 0) + 1)
    )
    assert me.orphan_reason(labels_of(reused), 0, at_start=False) == "its owner process is gone"
    gone = orphans.Owner("w0", me.boot, me.pid_namespace, 2**22 + 7, "1")
    assert me.orphan_reason(labels_of(gone), 0, at_start=False) == "its owner process is gone"
    rebooted = orphans.Owner("w0", "another-boot", me.pid_namespace, me.pid, me.started)
    assert "last boot" in str(me.orphan_reason(labels_of(rebooted), 0, at_start=False))


def test_an_owner_in_another_pid_namespace_is_judged_by_deadline_and_worker_id() -> None:
    me = orphans.Owner.of_this_process("w1")
    elsewhere = orphans.Owner("w1", me.boot, "elsewhere", 1, "1")
    labels = labels_of(elsewhere, remove_after=1000)
    assert me.orphan_reason(labels, 1000, at_start=False) is None
    assert me.orphan_reason(labels, 1000 + orphans.OVERDUE + 2, at_start=False) is not None
    # At a worker's start, the containers of its id's earlier incarnation go.
    assert me.orphan_reason(labels, 1000, at_start=True) is not None
    other = orphans.Owner("w2", me.boot, "elsewhere", 1, "1")
    assert me.orphan_reason(labels_of(other, 1000), 1000, at_start=True) is None
