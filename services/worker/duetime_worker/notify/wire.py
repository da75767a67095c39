"""The notifier's edge with the dead-letter topic: a ``DeadLetterEvent`` read into the worker's
``DeadLetter`` once, where it is consumed, its notification's body written then."""

from __future__ import annotations

from google.protobuf import json_format

from duetime.events.v1.events_pb2 import DeadLetterEvent
from duetime_infra.codec.target_codec import signing_of
from duetime_worker.notify.event import DeadLetter


def dead_letter_of(event: DeadLetterEvent) -> DeadLetter:
    """The event's run, team, job and attempt, where and how it is notified, and the body it is
    notified with (none when the team has no notification target: nothing is sent)."""
    return DeadLetter(
        run_id=event.run_id,
        team=event.team,
        job_name=event.job_name,
        attempt=event.attempt,
        notification_url=event.notification_url,
        signing=signing_of(event.notification_signing),
        body=notification_body(event) if event.notification_url else b"",
    )


def notification_body(event: DeadLetterEvent) -> bytes:
    """The event as proto3 JSON, without its notification URL (it may hold a secret) and how it
    is signed."""
    shown = DeadLetterEvent()
    shown.CopyFrom(event)
    shown.ClearField("notification_url")
    shown.ClearField("notification_signing")
    return json_format.MessageToJson(shown, indent=None).encode()
