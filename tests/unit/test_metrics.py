"""The metrics endpoint and instruments: off unless configured, served in the Prometheus text
format under the names and units docs/operations.md lists, with lateness buckets from ms to
an hour."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from datetime import timedelta

import pytest

from duetime_infra.config import ConfigError, EnvReader
from duetime_infra.telemetry import instruments
from duetime_infra.telemetry.metrics import MetricsEndpoint, sample_periodically, start_metrics
from testkit.metrics import scrape


@pytest.fixture
def endpoint(capsys: pytest.CaptureFixture[str]) -> Iterator[MetricsEndpoint]:
    started = start_metrics("127.0.0.1:0", "unit")
    assert started is not None
    assert f"DUETIME_METRICS_PORT={started.port}" in capsys.readouterr().out.splitlines()
    yield started
    started.close()


def test_metrics_are_off_without_an_address() -> None:
    assert start_metrics("", "unit") is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, ""), ("", ""), ("off", ""), (" OFF ", ""), ("[::]:9464", "[::]:9464")],
)
def test_the_address_may_be_left_out(raw: str | None, expected: str) -> None:
    env = EnvReader({} if raw is None else {"DUETIME_METRICS_ADDRESS": raw})
    assert env.optional_address("DUETIME_METRICS_ADDRESS") == expected
    env.finish()


def test_a_bad_address_is_reported_by_name() -> None:
    env = EnvReader({"DUETIME_METRICS_ADDRESS": "9464"})
    env.optional_address("DUETIME_METRICS_ADDRESS")
    with pytest.raises(ConfigError, match="DUETIME_METRICS_ADDRESS='9464': expected host:port"):
        env.finish()


def test_a_port_in_use_refuses_to_start() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(
            ConfigError, match=r"DUETIME_METRICS_ADDRESS='127\.0\.0\.1:\d+': cannot listen"
        ):
            start_metrics(f"127.0.0.1:{port}", "unit")


async def test_recorded_facts_are_scraped_with_prometheus_names(endpoint: MetricsEndpoint) -> None:
    instruments.attempt_started("HIGH", timedelta(milliseconds=30), timedelta(seconds=2))
    instruments.runs_finished("SUCCEEDED", "", 2)
    instruments.runs_finished("MISSED", "MISFIRE", 0)  # nothing happened: no series
    instruments.attempt_lease_expired("LEASE_EXPIRED")
    instruments.fencing_refused("claim", "token")
    instruments.partitions_changed("s1", 1024, 0, "acquired")
    instruments.partitions_changed("s1", 0, 1024, "lease refresh failed: timeout")
    instruments.outbox_sampled(12, timedelta(seconds=3.5))
    instruments.consumer_lag_sampled({"duetime.dispatch.high": 4})

    got = await scrape(endpoint.port)

    lateness = "duetime_run_start_lateness_seconds"
    effective = {"priority": "HIGH", "reference": "effective"}
    assert got.value(f"{lateness}_count", **effective) == 1
    assert got.value(f"{lateness}_sum", **effective) == pytest.approx(0.03)
    assert got.value(f"{lateness}_bucket", le="0.025", **effective) == 0
    assert got.value(f"{lateness}_bucket", le="0.05", **effective) == 1
    bounds = {s.labels["le"] for s in got.find(f"{lateness}_bucket", **effective)}
    assert bounds == {str(b) for b in instruments.LATENESS_BUCKETS} | {"+Inf"}
    nominal = {"priority": "HIGH", "reference": "nominal"}
    assert got.value(f"{lateness}_bucket", le="1.0", **nominal) == 0
    assert got.value(f"{lateness}_bucket", le="2.5", **nominal) == 1

    assert got.value("duetime_runs_finished_total", state="SUCCEEDED") == 2
    assert not got.find("duetime_runs_finished_total", state="MISSED")
    assert got.value("duetime_attempts_closed_total", outcome="LEASE_EXPIRED") == 1
    assert got.value("duetime_attempt_lease_expiries_total", outcome="LEASE_EXPIRED") == 1
    assert got.value("duetime_fencing_refusals_total", operation="claim", check="token") == 1
    assert got.value("duetime_partitions_owned", scheduler_id="s1") == 0
    assert got.value("duetime_partitions_lost_total", cause="lease_lost") == 1024
    assert got.value("duetime_outbox_depth") == 12
    assert got.value("duetime_outbox_oldest_age_seconds") == 3.5
    assert got.value("duetime_consumer_lag", topic="duetime.dispatch.high") == 4
    assert got.find("target_info", service_name="duetime-unit")
    assert "# TYPE duetime_runs_finished_total counter" in got.text


def test_a_closed_endpoint_records_nowhere(endpoint: MetricsEndpoint) -> None:
    endpoint.close()
    instruments.runs_finished("SUCCEEDED", "")  # a no-op, not an error
    with (
        pytest.raises(ConnectionRefusedError),
        socket.create_connection(("127.0.0.1", endpoint.port), 1),
    ):
        pass


async def test_sampling_outlives_a_failed_sample_and_stops_when_told() -> None:
    stopping = asyncio.Event()
    calls = 0

    async def sample() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConnectionError("database restarting")
        if calls == 3:
            stopping.set()

    await asyncio.wait_for(sample_periodically(0.01, sample, stopping), 5)
    assert calls == 3
