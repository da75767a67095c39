"""Dead-letter notifications: one DeadLetterEvent POSTed to its team's notification target.

The body is the event as proto3 JSON (without the target's URL, which may hold a secret), sent
with ``Idempotency-Key: dead-letter/{run_id}/{attempt}`` — stable per event, so a notification
repeated by a redelivery is recognisable — and the run's ``traceparent``. Answers are classified
as target answers are (2xx delivered; 408, 429, 5xx, timeouts and connection errors retried;
other 4xx and refused addresses final), through the same allow-listed HTTP client. Retries back
off with equal jitter. A notification is abandoned, and logged as an error, once its webhook
has been failing for ``give_up_after``: that clock is shared by every notification to the same
webhook, so a dead webhook with a thousand events waiting holds delivery slots for that time in
all, not for that time per event; after it, each of its events gets one short try. URLs are
logged by host alone.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from urllib.parse import urlsplit

from google.protobuf import json_format

from duetime.events.v1.events_pb2 import DeadLetterEvent
from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_core.backoff import backoff_delay
from duetime_core.jobspec import RetryPolicy
from duetime_worker.http_target import HttpCaller

log = logging.getLogger(__name__)

# The shortest request worth making once the give-up time is near.
_MIN_REQUEST_SECONDS = 0.5


class Delivery(enum.Enum):
    DELIVERED = "DELIVERED"
    NO_TARGET = "NO_TARGET"  # the team has no notification URL: nothing to send
    REJECTED = "REJECTED"  # a final answer (4xx, refused address, bad URL)
    ABANDONED = "ABANDONED"  # still failing when the give-up time came


@dataclass(frozen=True)
class NotifySettings:
    timeout: float = 10.0  # seconds per request
    give_up_after: float = 900.0  # seconds from the first try
    backoff: RetryPolicy = field(
        default_factory=lambda: RetryPolicy(
            initial_backoff=timedelta(seconds=1), max_backoff=timedelta(minutes=1)
        )
    )


def notification_key(event: DeadLetterEvent) -> str:
    """Stable per dead-lettering: a redriven run that dead-letters again has a higher attempt."""
    return f"dead-letter/{event.run_id}/{event.attempt}"


def notification_body(event: DeadLetterEvent) -> bytes:
    shown = DeadLetterEvent()
    shown.CopyFrom(event)
    shown.ClearField("notification_url")
    return json_format.MessageToJson(shown, indent=None).encode()


class FailingWebhooks:
    """Per webhook (scheme and authority): since when every try has failed."""

    def __init__(self) -> None:
        self._since: dict[str, float] = {}

    def failed(self, webhook: str, now: float) -> None:
        self._since.setdefault(webhook, now)

    def succeeded(self, webhook: str) -> None:
        self._since.pop(webhook, None)

    def since(self, webhook: str) -> float | None:
        return self._since.get(webhook)


class Notifier:
    def __init__(
        self,
        http: HttpCaller,
        settings: NotifySettings,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rand: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._http = http
        self._settings = settings
        self._sleep = sleep
        self._rand = rand
        self._clock = clock
        self._failing = FailingWebhooks()

    def _deadline(self, webhook: str, started: float) -> float:
        """The give-up time counts from this delivery's start or from when its webhook began
        to fail, whichever is earlier."""
        since = self._failing.since(webhook)
        return self._settings.give_up_after + (started if since is None else min(since, started))

    async def deliver(self, event: DeadLetterEvent, traceparent: str = "") -> Delivery:
        url = event.notification_url
        if not url:
            return Delivery.NO_TARGET
        headers = {
            "Content-Type": "application/json",
            "Idempotency-Key": notification_key(event),
        }
        if traceparent:
            headers["traceparent"] = traceparent
        body = notification_body(event)
        parts = urlsplit(url)
        webhook = f"{parts.scheme}://{parts.netloc}"
        facts = {
            "team": event.team,
            "run_id": event.run_id,
            "attempt": event.attempt,
            "host": parts.hostname or "",
        }
        started = self._clock()
        tries = 0
        while True:
            tries += 1
            deadline = self._deadline(webhook, started)
            limit = max(_MIN_REQUEST_SECONDS, min(self._settings.timeout, deadline - self._clock()))
            outcome = await self._http.send("POST", url, headers, body, limit)
            if outcome.result == pb.ATTEMPT_RESULT_SUCCEEDED:
                self._failing.succeeded(webhook)
                log.info(
                    "dead-letter notification delivered",
                    extra={"action": "notification_delivered", "tries": tries, **facts},
                )
                return Delivery.DELIVERED
            if not outcome.retryable:
                log.error(
                    "dead-letter notification rejected: the team is NOT notified",
                    extra={
                        "action": "notification_rejected",
                        "tries": tries,
                        "error": outcome.error,
                        **facts,
                    },
                )
                return Delivery.REJECTED
            self._failing.failed(webhook, self._clock())
            deadline = self._deadline(webhook, started)
            delay = backoff_delay(self._settings.backoff, tries, self._rand()).total_seconds()
            if self._clock() + delay >= deadline:
                log.error(
                    "dead-letter notification abandoned: the team is NOT notified",
                    extra={
                        "action": "notification_abandoned",
                        "tries": tries,
                        "error": outcome.error,
                        "give_up_after": self._settings.give_up_after,
                        **facts,
                    },
                )
                return Delivery.ABANDONED
            log.warning(
                "dead-letter notification failed; retrying",
                extra={
                    "action": "notification_retry",
                    "tries": tries,
                    "error": outcome.error,
                    "delay": delay,
                    **facts,
                },
            )
            await self._sleep(delay)
