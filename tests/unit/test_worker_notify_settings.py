"""The worker's dead-letter notification settings: defaults, and every bad one reported."""

from __future__ import annotations

import pytest

from duetime_infra.config import ConfigError
from duetime_worker.config import Settings

BASE = {
    "DUETIME_WORKER_TOKEN": "dtw_x",
    "DUETIME_WORKER_GROUP": "workers",
    "DUETIME_PLAINTEXT": "all",
}


def test_defaults() -> None:
    settings = Settings.from_env(BASE)
    assert settings.notify_group == "duetime-notifiers"
    assert (settings.notify_concurrency, settings.notify_timeout) == (32, 10)
    assert settings.notify_give_up_after == 900


def test_bad_notification_settings_are_all_reported() -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(
            {
                **BASE,
                "DUETIME_NOTIFY_GROUP": "workers",
                "DUETIME_NOTIFY_CONCURRENCY": "0",
                "DUETIME_NOTIFY_TIMEOUT_SECONDS": "soon",
                "DUETIME_NOTIFY_GIVE_UP_SECONDS": "0",
            }
        )
    message = str(raised.value)
    for name in (
        "DUETIME_NOTIFY_GROUP",
        "DUETIME_NOTIFY_CONCURRENCY",
        "DUETIME_NOTIFY_TIMEOUT_SECONDS",
        "DUETIME_NOTIFY_GIVE_UP_SECONDS",
    ):
        assert name in message, message
