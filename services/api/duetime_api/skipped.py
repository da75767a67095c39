"""The records of occurrences that will never be claimed: written by the API when it moves a
job's next run time past them (a resume, a new schedule, a DST gap under SKIP)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from duetime_core.jobspec import JobSpec, to_schedule
from duetime_core.misfire import dst_gap_skips
from duetime_core.planning import Occurrence
from duetime_core.records import JobRecord, RunReason, RunState
from duetime_core.runkey import RunKey
from duetime_core.schedule import next_fire_time
from duetime_infra.pg.job_store import NewRun

# Paused stretches longer than this many occurrences are recorded as one range up to the last
# one enumerated; the cap keeps a resume of an every-second job paused for weeks bounded.
MAX_SKIPPED_ENUMERATION = 100_000


def skip_record(
    job_id: uuid.UUID,
    team_id: str,
    partition: int,
    version: int,
    spec: JobSpec,
    span: tuple[datetime, datetime, int],
    reason: RunReason,
    why: str,
) -> NewRun:
    """One SKIPPED record standing for ``span``: first and last occurrence, and how many."""
    first, last, count = span
    return NewRun(
        run_id=uuid.uuid4(),
        key=RunKey.scheduled(job_id, first),
        team_id=team_id,
        partition=partition,
        effective_time=first,
        state=RunState.SKIPPED,
        job_version=version,
        attempt_limit=0,
        priority=spec.priority,
        reason=reason,
        reason_detail=f"{count} occurrence(s) {why}",
        range_end_time=last if count > 1 else None,
        occurrence_count=count,
    )


def gap_runs(
    job_id: uuid.UUID,
    team_id: str,
    partition: int,
    version: int,
    spec: JobSpec,
    now: datetime,
    first: Occurrence | None,
) -> list[NewRun]:
    """The DST_GAP record of a SKIP-gap job scheduled from ``now``: occurrences its first run
    time already jumped over are recorded here, since no claim will ever see them."""
    if first is None:
        return []
    gaps = dst_gap_skips(to_schedule(spec.schedule), now, first.nominal_time)
    if not gaps:
        return []
    return [
        skip_record(
            job_id,
            team_id,
            partition,
            version,
            spec,
            (gaps[0], gaps[-1], len(gaps)),
            RunReason.DST_GAP,
            "in a DST gap under DST_GAP_POLICY_SKIP",
        )
    ]


def skipped_range(
    record: JobRecord, start: datetime, now: datetime, reason: RunReason, why: str
) -> list[NewRun]:
    """One SKIPPED record for the job's occurrences from ``start`` (inclusive) to ``now``."""
    schedule = to_schedule(record.spec.schedule)
    first: datetime | None = None
    last: datetime | None = None
    count = 0
    cursor = start - timedelta(microseconds=1)
    try:
        while count < MAX_SKIPPED_ENUMERATION:
            nominal = next_fire_time(schedule, cursor)
            if nominal is None or nominal > now:
                break
            first = first or nominal
            last, cursor, count = nominal, nominal, count + 1
    except Exception:
        return []
    if first is None or last is None:
        return []
    return [
        skip_record(
            record.job_id,
            record.team_id,
            record.partition,
            record.version,
            record.spec,
            (first, last, count),
            reason,
            why,
        )
    ]
