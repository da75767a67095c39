"""Reading Duetime's metrics in tests: a service process's scrape endpoint over HTTP (the
Prometheus text format, parsed), or the instruments recorded in this process."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import aiohttp
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    InMemoryMetricReader,
    NumberDataPoint,
)
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from duetime_infra.telemetry import instruments
from duetime_infra.telemetry.metrics import PORT_MARKER
from testkit.processes import Service

_PORT_LINE = re.compile(rf"^{PORT_MARKER}=(\d+)$")


def metrics_port(service: Service) -> int:
    """The port a service printed for its metrics endpoint (it prints it before its own)."""
    for line in service.output:
        if match := _PORT_LINE.match(line):
            return int(match[1])
    raise AssertionError(f"no {PORT_MARKER} line:\n" + "\n".join(service.output[-20:]))


@dataclass(frozen=True)
class Scrape:
    samples: list[Sample]
    text: str

    def value(self, name: str, **labels: str) -> float:
        """The sum of the samples named ``name`` whose labels include ``labels``; 0 if none."""
        return sum(s.value for s in self.find(name, **labels))

    def find(self, name: str, **labels: str) -> list[Sample]:
        return [
            s
            for s in self.samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
        ]


async def scrape(port: int) -> Scrape:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/metrics") as response,
    ):
        assert response.status == 200, response.status
        text = await response.text()
    samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    return Scrape(samples, text)


class Recorded:
    """What this process's instruments recorded since ``recorded_metrics`` began."""

    def __init__(self, reader: InMemoryMetricReader) -> None:
        self._reader = reader

    def _points(self, name: str) -> list[NumberDataPoint | HistogramDataPoint]:
        data = self._reader.get_metrics_data()
        points: list[NumberDataPoint | HistogramDataPoint] = []
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        points.extend(metric.data.data_points)  # type: ignore[arg-type]
        return points

    def value(self, name: str, **attributes: str) -> float:
        """A counter's total (or a gauge's value) over the points whose attributes include
        ``attributes``; a histogram's count. 0 if nothing was recorded."""
        total = 0.0
        for point in self._points(name):
            if all(point.attributes.get(k) == v for k, v in attributes.items()):  # type: ignore[union-attr]
                total += point.count if isinstance(point, HistogramDataPoint) else point.value
        return total


@contextmanager
def recorded_metrics() -> Iterator[Recorded]:
    """Binds the instruments to an in-memory reader for the block, then back to no-op."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    instruments.bind(provider)
    try:
        yield Recorded(reader)
    finally:
        instruments.bind(None)
        provider.shutdown()
