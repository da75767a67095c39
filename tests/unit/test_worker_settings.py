"""The worker's slot settings: production defaults, and bounds."""

from __future__ import annotations

import pytest

from duetime_infra.config import ConfigError
from duetime_infra.grpc.channels import target_of
from duetime_worker.config import Settings

BASE = {
    "DUETIME_WORKER_TOKEN": "dtw_x",
    "DUETIME_WORKER_GROUP": "workers",
    "DUETIME_PLAINTEXT": "all",
}


def test_defaults_give_a_herd_its_slots_and_local_processes_fewer() -> None:
    settings = Settings.from_env(BASE)
    assert settings.concurrency == 2000
    assert settings.max_pending == 25_000
    assert settings.early_starts == 25_000
    assert settings.local_launcher_concurrency == 16


def test_max_pending_below_the_slots_is_accepted() -> None:
    # It bounds the messages not yet answered; the attempts running are the slots' to bound.
    settings = Settings.from_env(
        {**BASE, "DUETIME_WORKER_CONCURRENCY": "500", "DUETIME_WORKER_MAX_PENDING": "100"}
    )
    assert (settings.concurrency, settings.max_pending) == (500, 100)


def test_unset_slots_stay_within_a_lower_max_pending() -> None:
    # A deployment that set MAX_PENDING below the 2,000 default slots keeps starting.
    settings = Settings.from_env({**BASE, "DUETIME_WORKER_MAX_PENDING": "500"})
    assert (settings.concurrency, settings.max_pending) == (500, 500)


def test_connections_per_host_default_and_setting() -> None:
    assert Settings.from_env(BASE).connections_per_host == 256
    unlimited = Settings.from_env({**BASE, "DUETIME_HTTP_CONNECTIONS_PER_HOST": "0"})
    assert unlimited.connections_per_host == 0
    with pytest.raises(ConfigError, match="DUETIME_HTTP_CONNECTIONS_PER_HOST"):
        Settings.from_env({**BASE, "DUETIME_HTTP_CONNECTIONS_PER_HOST": "-1"})


def test_start_concurrency_has_a_default_and_bounds() -> None:
    assert Settings.from_env(BASE).start_concurrency == 256
    chosen = Settings.from_env({**BASE, "DUETIME_WORKER_START_CONCURRENCY": "64"})
    assert chosen.start_concurrency == 64
    with pytest.raises(ConfigError, match="DUETIME_WORKER_START_CONCURRENCY"):
        Settings.from_env({**BASE, "DUETIME_WORKER_START_CONCURRENCY": "0"})


def test_several_schedulers_are_ip_addresses_or_one_name() -> None:
    two = Settings.from_env({**BASE, "DUETIME_SCHEDULER_TARGET": "10.0.0.1:5, 10.0.0.2:5"})
    assert two.scheduler_addresses == ("10.0.0.1:5", "10.0.0.2:5")
    assert target_of(two.scheduler_addresses) == "ipv4:10.0.0.1:5,10.0.0.2:5"
    named = Settings.from_env({**BASE, "DUETIME_SCHEDULER_TARGET": "schedulers.internal:50052"})
    assert target_of(named.scheduler_addresses) == "schedulers.internal:50052"
    for bad in ("a.internal:1,b.internal:1", "10.0.0.1:5,[::1]:5", "10.0.0.1", ""):
        with pytest.raises(ConfigError, match="DUETIME_SCHEDULER_TARGET"):
            Settings.from_env({**BASE, "DUETIME_SCHEDULER_TARGET": bad})
