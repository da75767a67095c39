"""A dead-lettered run as the notifier sends it, in the worker's own terms: read once from its
``DeadLetterEvent`` where the event is consumed (``notify.wire``)."""

from __future__ import annotations

from dataclasses import dataclass

from duetime_core.jobspec import CallSigning


@dataclass(frozen=True, slots=True)
class DeadLetter:
    run_id: str
    team: str
    job_name: str  # the ID token's subject
    attempt: int  # the last attempt's number
    # The team's notification target as the run was dead-lettered; empty: none. May carry a
    # secret: never logged whole.
    notification_url: str = ""
    # How the notification is signed; None: not said (an older scheduler's event), read with
    # the team's keys.
    signing: CallSigning | None = None
    # The notification's body: the event as proto3 JSON, without the URL and the signing.
    body: bytes = b""
