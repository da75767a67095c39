"""The SKIPPED records the API writes for occurrences that will never be claimed (the spans
are core's: ``duetime_core.skipped``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from duetime_core.jobspec import JobSpec, to_schedule
from duetime_core.planning import Occurrence
from duetime_core.records import JobRecord, RunReason, RunState
from duetime_core.runkey import RunKey, new_run_id
from duetime_core.skipped import SkippedSpan, dst_gap_span
from duetime_infra.pg.jobs.store import NewRun


@dataclass(frozen=True)
class JobVersion:
    """The job, at the version the records are written under."""

    job_id: uuid.UUID
    team_id: str
    partition: int
    version: int
    spec: JobSpec

    @classmethod
    def of(cls, record: JobRecord) -> JobVersion:
        return cls(record.job_id, record.team_id, record.partition, record.version, record.spec)


def skip_records(
    job: JobVersion, span: SkippedSpan | None, reason: RunReason, why: str
) -> list[NewRun]:
    """One SKIPPED record standing for ``span`` (none without a span)."""
    if span is None:
        return []
    return [
        NewRun(
            run_id=new_run_id(),
            key=RunKey.scheduled(job.job_id, span.first),
            team_id=job.team_id,
            partition=job.partition,
            effective_time=span.first,
            state=RunState.SKIPPED,
            job_version=job.version,
            attempt_limit=0,
            priority=job.spec.priority,
            reason=reason,
            reason_detail=f"{span.count} occurrence(s) {why}",
            range_end_time=span.last if span.count > 1 else None,
            occurrence_count=span.count,
        )
    ]


def gap_records(job: JobVersion, now: datetime, first: Occurrence | None) -> list[NewRun]:
    """The DST_GAP record of a SKIP-gap job scheduled from ``now`` to its ``first`` run."""
    span = dst_gap_span(to_schedule(job.spec.schedule), now, first)
    return skip_records(job, span, RunReason.DST_GAP, "in a DST gap under DST_GAP_POLICY_SKIP")
