"""What a resume does with the occurrences its pause covered, told before it does it.

Without catch-up they are all recorded SKIPPED (JOB_PAUSED) as one range. With catch-up the
job resumes at the first of them and the scheduler's next claim treats them as misfired:
the job's misfire policy decides which run late and which are MISSED. The forecast runs the
claim's own rules (``plan_claim``) at the resume's instant, so it says what a claim then would
do; the claim itself comes a few seconds later, which can move an occurrence on the edge of
the misfire threshold from on time to late.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from duetime_core.claim_plan import PlannedRun, plan_claim
from duetime_core.jobspec import JobSpec, JobState, MisfirePolicy, to_schedule
from duetime_core.planning import Occurrence, next_nominal
from duetime_core.records import RunState
from duetime_core.skipped import MAX_SKIPPED_ENUMERATION, SkippedSpan, skipped_between

_BEFORE = timedelta(microseconds=1)


@dataclass(frozen=True)
class ResumeForecast:
    """The paused stretch's occurrences (``covered``) and what becomes of them."""

    covered: SkippedSpan | None = None
    # Recorded SKIPPED: all of them without catch-up; DST gaps under SKIP with it.
    skipped: SkippedSpan | None = None
    # Run late under the misfire policy, oldest first.
    catch_up: list[Occurrence] = field(default_factory=list)
    # Still within the misfire threshold: they run as on time.
    on_time: list[Occurrence] = field(default_factory=list)
    # Recorded MISSED because older than max_catch_up_age (RUN_ALL) ...
    too_old: SkippedSpan | None = None
    # ... and for any other reason of the policy (beyond max_catch_up_runs, RUN_ONCE, SKIP).
    missed: SkippedSpan | None = None
    # More occurrences than one forecast enumerates: counts are lower bounds.
    truncated: bool = False


def skip_forecast(span: SkippedSpan | None) -> ResumeForecast:
    """A resume without catch-up: everything the pause covered is SKIPPED."""
    truncated = span is not None and span.count >= MAX_SKIPPED_ENUMERATION
    return ResumeForecast(covered=span, skipped=span, truncated=truncated)


def _joined(spans: list[SkippedSpan]) -> SkippedSpan | None:
    if not spans:
        return None
    return SkippedSpan(spans[0].first, spans[-1].last, sum(s.count for s in spans))


def _span(run: PlannedRun) -> SkippedSpan:
    return SkippedSpan(
        run.nominal_time, run.range_end_time or run.nominal_time, run.occurrence_count
    )


def _split_at(
    spec: JobSpec, span: SkippedSpan, cut: datetime
) -> tuple[SkippedSpan | None, SkippedSpan | None]:
    """``span``'s occurrences before ``cut``, and from it on."""
    if span.last < cut:
        return span, None
    if span.first >= cut:
        return None, span
    schedule = to_schedule(spec.schedule)
    older = skipped_between(schedule, span.first, cut - _BEFORE)
    if older is None:
        return None, span
    rest_first = next_nominal(schedule, older.last) or span.last
    return older, SkippedSpan(rest_first, span.last, span.count - older.count)


def catch_up_forecast(
    job_id: uuid.UUID, spec: JobSpec, first: Occurrence, now: datetime, made: int = 0
) -> ResumeForecast:
    """What the claims at ``now`` make of the occurrences from ``first`` on (the job resumed
    with catch-up, its schedule having made ``made`` runs)."""
    planned: list[PlannedRun] = []
    pending: Occurrence | None = first
    examined = 0
    while pending is not None and pending.effective_time <= now:
        if examined >= MAX_SKIPPED_ENUMERATION:
            break
        plan = plan_claim(job_id, spec, pending, now, timedelta(0), made)
        made += len(plan.made)
        planned += plan.runs
        examined += sum(run.occurrence_count for run in plan.runs)
        pending = plan.next if plan.state is JobState.ACTIVE else None
    late_before = now - spec.misfire.threshold
    queued = [
        Occurrence(run.nominal_time, run.effective_time)
        for run in planned
        if run.state is RunState.QUEUED
    ]
    missed = [_span(run) for run in planned if run.state is RunState.MISSED]
    too_old: list[SkippedSpan] = []
    if spec.misfire.policy is MisfirePolicy.RUN_ALL:
        cut = now - spec.misfire.max_catch_up_age
        parts = [_split_at(spec, span, cut) for span in missed]
        too_old = [older for older, _ in parts if older is not None]
        missed = [rest for _, rest in parts if rest is not None]
    covered = sorted((_span(run) for run in planned), key=lambda s: s.first)
    return ResumeForecast(
        covered=_joined(covered),
        skipped=_joined([_span(run) for run in planned if run.state is RunState.SKIPPED]),
        catch_up=[o for o in queued if o.effective_time < late_before],
        on_time=[o for o in queued if o.effective_time >= late_before],
        too_old=_joined(too_old),
        missed=_joined(missed),
        truncated=pending is not None and pending.effective_time <= now,
    )
