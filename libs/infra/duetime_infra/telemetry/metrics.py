"""The scrape endpoint: Duetime's instruments served in the Prometheus text format.

``start_metrics`` builds a MeterProvider whose PrometheusMetricReader is read by prometheus
client's HTTP server (a daemon thread) on ``DUETIME_METRICS_ADDRESS``, binds the instruments of
``telemetry.instruments`` to it, and prints ``DUETIME_METRICS_PORT=<port>`` so a launcher that
asked for port 0 learns the real one. An empty address (or ``off``) leaves metrics off.

A scrape never waits on the service's event loop: counters and histograms are recorded as facts
happen, and gauges that need a query (outbox depth, consumer lag) are sampled in the loop by
``sample_periodically`` and only read by the scrape.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server

from duetime_infra.config import ConfigError
from duetime_infra.telemetry import instruments

log = logging.getLogger(__name__)

PORT_MARKER = "DUETIME_METRICS_PORT"


@dataclass
class MetricsEndpoint:
    address: str
    port: int
    provider: MeterProvider
    _server: WSGIServer

    def close(self) -> None:
        """Stops serving and recording (instruments go back to no-op)."""
        instruments.bind(None)
        self._server.shutdown()
        self._server.server_close()
        self.provider.shutdown()


def start_metrics(address: str, service: str) -> MetricsEndpoint | None:
    """Serves metrics on ``address`` (host:port, port 0: any free one); ``""``: metrics off.

    Raises ConfigError when the address cannot be bound, so the service refuses to start with
    one clear line instead of running unobserved.
    """
    if not address:
        return None
    host, _, port = address.rpartition(":")
    # A registry of our own: nothing else in the process can add to or break the scrape.
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    reader = PrometheusMetricReader(registry=registry, scope_info_enabled=False)
    provider = MeterProvider(
        resource=Resource.create({SERVICE_NAME: f"duetime-{service}"}),
        metric_readers=[reader],
    )
    try:
        server, _ = start_http_server(int(port), host.strip("[]"), registry)
    except OSError as error:
        provider.shutdown()
        raise ConfigError(f"DUETIME_METRICS_ADDRESS={address!r}: cannot listen: {error}") from None
    instruments.bind(provider)
    endpoint = MetricsEndpoint(address, server.server_port, provider, server)
    log.info(
        "metrics serving",
        extra={"action": "metrics_serving", "address": address, "port": endpoint.port},
    )
    print(f"{PORT_MARKER}={endpoint.port}", flush=True)
    return endpoint


async def sample_periodically(
    interval: float, sample: Callable[[], Awaitable[None]], stopping: asyncio.Event
) -> None:
    """Calls ``sample`` every ``interval`` seconds until ``stopping`` is set; a failed sample
    is logged and the next one tried, so a database or broker hiccup never ends sampling."""
    while not stopping.is_set():
        try:
            await sample()
        except Exception:
            log.warning("metrics sample failed", exc_info=True, extra={"action": "sample_failed"})
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), interval)
