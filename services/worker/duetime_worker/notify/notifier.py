"""Dead-letter notifications: one dead-lettered run (``event.DeadLetter``, read from its
DeadLetterEvent by ``wire``) POSTed to its team's notification target.

The body is the event as proto3 JSON (without the target's URL, which may hold a secret), sent
with ``Idempotency-Key: dead-letter/{run_id}/{attempt}`` — stable per event, so a notification
repeated by a redelivery is recognisable — and the run's ``traceparent``. Answers are classified
as target answers are (2xx delivered; 408, 429, 5xx, timeouts and connection errors retried;
other 4xx and refused addresses final), through the same allow-listed HTTP client. Retries back
off with equal jitter. A notification is abandoned, and logged as an error, once its webhook
has been failing for ``give_up_after``: that clock is shared by every notification to the same
webhook, so a dead webhook with a thousand events waiting holds delivery slots for that time in
all, not for that time per event; after it, each of its events gets one try. A failing spell
ends when the webhook's server answers (2xx, or a final 4xx: it is reachable), or once nothing
has failed for a whole give-up time, so an old outage never shortens a new event's retries.
Each try is signed as the team's default said when the run was dead-lettered (the event
carries it, so a team that does not sign costs no key fetch; an older scheduler's event does
not, and the worker reads the default with the team's keys; ``targets.http.signer``), its ID
token's audience the notification URL without its query and its subject the job's name. Keys
the scheduler refuses (the run was dead-lettered longer ago than
``duetime_core.notifications.DEAD_LETTER_KEYS_WINDOW``) reject the notification at once, logged
as an error like a final 4xx: retrying would be refused again.

Past its give-up time a webhook gets one probe at a time: the event that finds no probe out
becomes it, and its one try gets the whole timeout (a webhook that recovered but is slow must
get a chance to end its spell); the others are abandoned at once, without a request, while
it is out. Otherwise a blackholed webhook with thousands of events waiting would hold every
notify slot for a whole timeout per event, delaying other teams' notifications for hours. A
probe that succeeds ends the spell; one that fails lets the next event probe. URLs are logged
by host alone.
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
from typing import Any
from urllib.parse import urlsplit

from duetime_core.backoff import backoff_delay
from duetime_core.jobspec import RetryPolicy
from duetime_core.notifications import NOTIFY_GIVE_UP
from duetime_core.records import AttemptOutcome
from duetime_worker.notify.event import DeadLetter
from duetime_worker.targets.http.caller import HttpCaller
from duetime_worker.targets.http.signer import SignedCall
from duetime_worker.targets.outcome import Outcome

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
    # Seconds from the first try, or from when its webhook began failing if that is earlier.
    give_up_after: float = NOTIFY_GIVE_UP.total_seconds()
    backoff: RetryPolicy = field(
        default_factory=lambda: RetryPolicy(
            initial_backoff=timedelta(seconds=1), max_backoff=timedelta(minutes=1)
        )
    )


def notification_key(event: DeadLetter) -> str:
    """Stable per dead-lettering: a redriven run that dead-letters again has a higher attempt."""
    return f"dead-letter/{event.run_id}/{event.attempt}"


class FailingWebhooks:
    """Per webhook (scheme and authority): its current failing spell, from its first failure to
    its latest. A spell ends when the server answers, or when it has not failed for ``window``
    (the give-up time): a failure after that begins a new spell."""

    def __init__(self, window: float) -> None:
        self._window = window
        self._spells: dict[str, tuple[float, float]] = {}  # webhook: (first, latest failure)

    def failed(self, webhook: str, now: float) -> None:
        since = self.since(webhook, now)
        self._spells[webhook] = (now if since is None else since, now)

    def answered(self, webhook: str) -> None:
        self._spells.pop(webhook, None)

    def since(self, webhook: str, now: float) -> float | None:
        """When the webhook's current spell began; None when it is not failing."""
        spell = self._spells.get(webhook)
        if spell is None:
            return None
        if now - spell[1] >= self._window:
            del self._spells[webhook]
            return None
        return spell[0]


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
        self._failing = FailingWebhooks(settings.give_up_after)
        # Webhooks past their give-up time with a probe out (see the module's doc).
        self._probing: set[str] = set()

    def _deadline(self, webhook: str, started: float) -> float:
        """The give-up time counts from this delivery's start or from when its webhook's
        current failing spell began, whichever is earlier."""
        since = self._failing.since(webhook, self._clock())
        return self._settings.give_up_after + (started if since is None else min(since, started))

    def _limit(self, webhook: str, started: float, tries: int) -> float:
        """A first try gets the whole timeout (a webhook that recovered but is slow must get a
        chance to end its spell); a retry no more than what is left before the give-up time."""
        if tries == 1:
            return self._settings.timeout
        left = self._deadline(webhook, started) - self._clock()
        return max(_MIN_REQUEST_SECONDS, min(self._settings.timeout, left))

    async def deliver(self, event: DeadLetter, traceparent: str = "") -> Delivery:
        url = event.notification_url
        if not url:
            return Delivery.NO_TARGET
        headers = {
            "Content-Type": "application/json",
            "Idempotency-Key": notification_key(event),
        }
        if traceparent:
            headers["traceparent"] = traceparent
        webhook, host = _webhook(url)
        facts = {
            "team": event.team,
            "run_id": event.run_id,
            "attempt": event.attempt,
            "host": host,
        }
        started = self._clock()
        past_give_up = self._clock() >= self._deadline(webhook, started)
        if past_give_up and webhook in self._probing:
            error = "its webhook is failing past its give-up time and being probed"
            return self._abandoned(0, error, facts)
        if past_give_up:
            self._probing.add(webhook)
        signed = SignedCall(
            team=event.team,
            run_id=event.run_id,
            # The team's default as the run was dead-lettered: OFF fetches no keys.
            # Unspecified (an older scheduler's event): read with the team's keys.
            signing=event.signing,
            message_id=headers["Idempotency-Key"],
            audience="",
            subject=event.job_name,
            attempt=event.attempt,
            url=url,
            fresh=True,  # no start names its keys: a key revoked since must not sign it
            # Refused keys (dead-lettered too long ago) are not retried: rejected, logged.
            refusal_final=True,
        )
        try:
            return await self._tries(url, webhook, (headers, signed), event.body, started, facts)
        finally:
            if past_give_up:
                self._probing.discard(webhook)

    async def _tries(
        self,
        url: str,
        webhook: str,
        request: tuple[dict[str, str], SignedCall],
        body: bytes,
        started: float,
        facts: dict[str, Any],
    ) -> Delivery:
        """The event's tries until it is delivered, rejected or abandoned; each try signed
        afresh (its timestamp, its token's expiry) as the team's calls are."""
        tries = 0
        while True:
            tries += 1
            limit = self._limit(webhook, started, tries)
            headers = dict(request[0])
            ready = await self._http.prepare(request[1], headers)
            outcome = (
                ready
                if isinstance(ready, Outcome)
                else await self._http.send("POST", url, headers, body, limit, stamp=ready)
            )
            final = self._answered(outcome, webhook, tries, facts)
            if final is not None:
                return final
            self._failing.failed(webhook, self._clock())
            deadline = self._deadline(webhook, started)
            delay = backoff_delay(self._settings.backoff, tries, self._rand()).total_seconds()
            if self._clock() + delay >= deadline:
                return self._abandoned(tries, outcome.error, facts)
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

    def _answered(
        self, outcome: Outcome, webhook: str, tries: int, facts: dict[str, Any]
    ) -> Delivery | None:
        """How a final answer ends the delivery (delivered, or rejected), logged; an answer
        from the server ends its webhook's failing spell. None: the try is to be retried."""
        if outcome.result is AttemptOutcome.SUCCEEDED:
            self._failing.answered(webhook)
            log.info(
                "dead-letter notification delivered",
                extra={"action": "notification_delivered", "tries": tries, **facts},
            )
            return Delivery.DELIVERED
        if outcome.retryable:
            return None
        if outcome.status:  # a final 4xx: the server is reachable, the webhook is up
            self._failing.answered(webhook)
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

    def _abandoned(self, tries: int, error: str, facts: dict[str, Any]) -> Delivery:
        log.error(
            "dead-letter notification abandoned: the team is NOT notified",
            extra={
                "action": "notification_abandoned",
                "tries": tries,
                "error": error,
                "give_up_after": self._settings.give_up_after,
                **facts,
            },
        )
        return Delivery.ABANDONED


def _webhook(url: str) -> tuple[str, str]:
    """The webhook a URL belongs to (scheme and authority: its failures are counted together),
    and its host for the logs; empty for a URL that cannot be parsed (the call refuses it)."""
    try:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}", parts.hostname or ""
    except ValueError:
        return "", ""
