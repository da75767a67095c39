"""The fleet's health from the services' own Prometheus endpoints (docs/operations.md,
"Metrics"): partitions per scheduler, the outbox's depth and age, the workers' consumer lag,
lease expiries, runs held. Each endpoint named in the console's settings is read when the page
is asked for, all at once, each within a short timeout; one that does not answer is shown as
down, the others still count."""

from __future__ import annotations

import asyncio
import urllib.request
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from duetime_console.config import MetricsTarget

READ_TIMEOUT_SECONDS = 2.0
# A scrape is small text; more than this is not a Duetime endpoint.
MAX_BYTES = 4 * 1024 * 1024


@dataclass
class Endpoint:
    target: MetricsTarget
    up: bool
    error: str = ""
    # name -> [(labels, value)]
    samples: dict[str, list[tuple[dict[str, str], float]]] = field(default_factory=dict)

    def total(self, name: str, **labels: str) -> float:
        return sum(
            value
            for found, value in self.samples.get(name, [])
            if all(found.get(k) == v for k, v in labels.items())
        )

    def by(self, name: str, label: str) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for found, value in self.samples.get(name, []):
            out[found.get(label, "")] += value
        return dict(out)


@dataclass
class Fleet:
    endpoints: list[Endpoint]

    def of(self, service: str) -> list[Endpoint]:
        return [e for e in self.endpoints if e.target.service == service and e.up]

    @property
    def partitions_by_scheduler(self) -> dict[str, float]:
        owned: dict[str, float] = {}
        for endpoint in self.of("scheduler"):
            owned.update(endpoint.by("duetime_partitions_owned", "scheduler_id"))
        return owned

    @property
    def partitions_owned(self) -> float:
        return sum(self.partitions_by_scheduler.values())

    def total(self, service: str, name: str, **labels: str) -> float:
        return sum(e.total(name, **labels) for e in self.of(service))

    def by(self, service: str, name: str, label: str) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for endpoint in self.of(service):
            for key, value in endpoint.by(name, label).items():
                out[key] += value
        return dict(out)

    def highest(self, service: str, name: str) -> float:
        return max((e.total(name) for e in self.of(service)), default=0.0)


def _fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=READ_TIMEOUT_SECONDS) as response:
        return str(response.read(MAX_BYTES).decode("utf-8", errors="replace"))


def parse(target: MetricsTarget, text: str) -> Endpoint:
    samples: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[sample.name].append((dict(sample.labels), float(sample.value)))
    return Endpoint(target, True, samples=dict(samples))


async def _read(target: MetricsTarget) -> Endpoint:
    try:
        text = await asyncio.wait_for(
            asyncio.to_thread(_fetch, target.url), READ_TIMEOUT_SECONDS + 1
        )
        return parse(target, text)
    except (OSError, TimeoutError, ValueError) as error:
        return Endpoint(target, False, error=str(error) or type(error).__name__)


async def read(targets: Sequence[MetricsTarget]) -> Fleet:
    return Fleet(list(await asyncio.gather(*(_read(t) for t in targets))))
