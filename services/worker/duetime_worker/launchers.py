"""The launcher for container targets that the operator chose (``DUETIME_CONTAINER_LAUNCHER``)."""

from __future__ import annotations

from duetime_worker.config import Settings
from duetime_worker.container import DisabledLauncher, Launcher, LocalProcessLauncher
from duetime_worker.images import ImagePolicy
from duetime_worker.podman import PodmanLauncher


def launcher_for(settings: Settings) -> Launcher:
    if settings.container_launcher == "podman":
        images = ImagePolicy.parse(settings.container_images)
        return PodmanLauncher(settings.podman, images, settings.worker_id)
    if settings.container_launcher == "local":
        return LocalProcessLauncher(
            settings.local_launcher_commands, settings.local_launcher_concurrency
        )
    return DisabledLauncher()
