"""What BackfillJob decides: the range checked, the occurrences counted (core's
``duetime_core.backfill``), and, unless validated only, the runs made by the store."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import datetime

from duetime_api.jobs import check_request_id, fingerprint
from duetime_core.backfill import (
    BackfillOverlap,
    BackfillPlan,
    check_range,
    occurrences_in,
    plan_backfill,
)
from duetime_core.errors import Aborted
from duetime_core.records import JobRecord
from duetime_core.runkey import backfill_origin, rfc3339_utc
from duetime_infra.pg.jobs.store import Idempotency, JobStore


@dataclass(frozen=True)
class BackfillAsk:
    start: datetime | None
    end: datetime | None
    overlap: BackfillOverlap
    validate_only: bool
    request_id: str

    def fingerprint(self, job_id: uuid.UUID) -> bytes:
        start = rfc3339_utc(self.start) if self.start else ""
        end = rfc3339_utc(self.end) if self.end else ""
        return fingerprint(f"{job_id}/{start}/{end}/{self.overlap}")


@dataclass(frozen=True)
class Backfilled:
    """The occurrences in the range and those run (validated only: that would be), and how
    many runs were made."""

    plan: BackfillPlan
    made: int


async def backfill(
    store: JobStore, team_id: str, job_id: uuid.UUID, ask: BackfillAsk
) -> Backfilled:
    check_request_id(ask.request_id, required=not ask.validate_only)
    span = check_range(ask.start, ask.end, await store.now())
    record = await store.get_job(team_id, job_id)
    schedule = record.spec.schedule
    calendars = await store.calendars_for(team_id, record.spec)
    # Counting 10,000 occurrences takes a moment: off the event loop.
    occurrences = await asyncio.to_thread(occurrences_in, schedule, span)
    if ask.validate_only:
        ran = set()
        if ask.overlap is BackfillOverlap.SKIP_RAN:
            ran = await store.backfill_ran(job_id, occurrences)
        plan = plan_backfill(occurrences, ask.overlap, ran, calendars)
        return Backfilled(plan, len(plan.runs))

    def decide(job: JobRecord, ran: set[datetime]) -> BackfillPlan:
        if (job.spec.schedule, job.spec.excluded_calendars) != (
            schedule,
            record.spec.excluded_calendars,
        ):
            raise Aborted("the job's schedule changed meanwhile; try again", reason="JOB_CHANGED")
        return plan_backfill(occurrences, ask.overlap, ran, calendars)

    idem = Idempotency("BackfillJob", ask.request_id, ask.fingerprint(job_id))
    plan, made = await store.backfill(
        team_id,
        job_id,
        idem,
        backfill_origin(ask.request_id),
        decide,
        one_at_a_time=ask.overlap is BackfillOverlap.ONE_AT_A_TIME,
    )
    return Backfilled(plan, made)
