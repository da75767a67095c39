"""The outbox row that announces a dead-lettered run: a DeadLetterEvent on the dead-letter
topic, keyed by job id, carrying the run's trace context and the team's notification target
and signing (read when the run is dead-lettered, so no claim or start pays for it)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from duetime.events.v1 import events_pb2
from duetime_core.jobspec import CallSigning
from duetime_core.runkey import RunKey
from duetime_infra.codec.records_codec import job_name
from duetime_infra.codec.target_codec import SIGNING_NUMBERS
from duetime_infra.codec.timeconv import datetime_to_timestamp
from duetime_infra.dispatch import OutboxRow
from duetime_infra.kafka.topics import DEAD_LETTER_TOPIC


@dataclass(frozen=True)
class Notification:
    """Where a team is alerted of its dead-lettered runs (empty: nowhere), and how the alert is
    signed (its default_call_signing: OFF lets the worker send it without fetching keys)."""

    url: str
    signing: CallSigning


def dead_letter_row(
    *,
    run_id: uuid.UUID,
    key: RunKey,
    team_id: str,
    attempt: int,
    reason: str,
    last_error: str,
    traceparent: str,
    now: datetime,
    notification: Notification,
) -> OutboxRow:
    message = events_pb2.DeadLetterEvent(
        run_id=str(run_id),
        job_id=str(key.job_id),
        team=team_id,
        job_name=job_name(team_id, key.job_id),
        idempotency_key=key.canonical(),
        nominal_time=datetime_to_timestamp(key.nominal_time),
        attempt=attempt,
        reason=reason,
        last_error=last_error,
        dead_letter_time=datetime_to_timestamp(now),
        notification_url=notification.url,
        notification_signing=SIGNING_NUMBERS[notification.signing],
    )
    headers = {"traceparent": traceparent} if traceparent else {}
    return OutboxRow(
        topic=DEAD_LETTER_TOPIC,
        key=str(key.job_id).encode(),
        payload=message.SerializeToString(),
        headers=headers,
        team_id=team_id,
        run_id=run_id,
    )
