"""The notifier's edge (``duetime_worker.notify.wire``): a dead-letter event read once into the
worker's ``DeadLetter``, its notification's body written then, whatever the event leaves out."""

from __future__ import annotations

import json

from duetime.events.v1.events_pb2 import DeadLetterEvent
from duetime.jobs.v1 import job_pb2
from duetime_core.jobspec import CallSigning
from duetime_worker.notify.event import DeadLetter
from duetime_worker.notify.wire import dead_letter_of

URL = "https://hooks.test/dead?token=secret"


def test_an_event_is_read_with_where_and_how_it_is_notified_and_its_body() -> None:
    event = DeadLetterEvent(
        run_id="r1",
        job_id="j1",
        team="team-a",
        job_name="teams/team-a/jobs/j1",
        idempotency_key="j1/2026-01-01T00:00:00Z",
        attempt=3,
        reason="ATTEMPTS_EXHAUSTED",
        last_error="HTTP 500",
        notification_url=URL,
        notification_signing=job_pb2.CALL_SIGNING_WEBHOOK,
    )
    event.nominal_time.FromJsonString("2026-01-01T00:00:00Z")
    read = dead_letter_of(event)
    assert read == DeadLetter(
        run_id="r1",
        team="team-a",
        job_name="teams/team-a/jobs/j1",
        attempt=3,
        notification_url=URL,
        signing=CallSigning.WEBHOOK,
        body=read.body,
    )
    assert json.loads(read.body) == {
        "runId": "r1",
        "jobId": "j1",
        "team": "team-a",
        "jobName": "teams/team-a/jobs/j1",
        "idempotencyKey": "j1/2026-01-01T00:00:00Z",
        "nominalTime": "2026-01-01T00:00:00Z",
        "attempt": 3,
        "reason": "ATTEMPTS_EXHAUSTED",
        "lastError": "HTTP 500",
    }  # neither the URL (it may hold a secret) nor the signing
    assert event.notification_url == URL  # the event itself is left as it was


def test_an_event_without_a_target_has_no_body_and_an_unsaid_signing() -> None:
    assert dead_letter_of(DeadLetterEvent(run_id="r", attempt=1)) == DeadLetter(
        run_id="r", team="", job_name="", attempt=1
    )


def test_a_signing_unknown_to_this_build_is_read_as_unsaid() -> None:
    for number in (job_pb2.CALL_SIGNING_UNSPECIFIED, 42):
        event = DeadLetterEvent(notification_url=URL, notification_signing=number)  # type: ignore[arg-type]
        assert dead_letter_of(event).signing is None
    event = DeadLetterEvent(notification_url=URL, notification_signing=job_pb2.CALL_SIGNING_OFF)
    assert dead_letter_of(event).signing is CallSigning.OFF
    assert json.loads(dead_letter_of(event).body) == {}
