"""What each JobService call decides (``JobOperations``): the rules between a request and the
store; the servicer only converts messages around them."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta

from duetime.jobs.v1 import job_pb2
from duetime_api.skipped import JobVersion, gap_records, skip_records
from duetime_core.calendars import CalendarRules, job_calendars
from duetime_core.ending import end_reason, has_end, past_the_end
from duetime_core.errors import Aborted, FailedPrecondition, InvalidArgument
from duetime_core.history import (
    FIELD_PATHS,
    MAX_PAUSE_NOTE,
    ChangeKind,
    JobPause,
    VersionChange,
    spec_changes,
)
from duetime_core.identity import Principal
from duetime_core.jobspec import (
    ContainerTarget,
    HttpTarget,
    JobSpec,
    JobState,
    SecretValue,
    is_one_off,
    same_series,
    to_schedule,
    updated_schedule,
)
from duetime_core.planning import (
    Occurrence,
    ScheduleError,
    effective_time,
    first_occurrence,
    next_occurrence,
)
from duetime_core.preview import PreviewItem, job_preview
from duetime_core.quotas import STORED_STATES, TeamState, check_job_quota
from duetime_core.records import JobRecord, RunReason, RunRecord, RunState
from duetime_core.resume import ResumeForecast, catch_up_forecast, skip_forecast
from duetime_core.runkey import RunKey, new_run_id, partition_of
from duetime_core.skipped import SkippedSpan, skipped_between
from duetime_core.text import text_problem
from duetime_infra.codec.job_codec import decode_job_spec, encode_job_spec
from duetime_infra.codec.target_codec import REDACTED
from duetime_infra.dispatch import OutboxRow, dispatch_row
from duetime_infra.pg.jobs.store import Idempotency, JobStore, JobWrite, NewRun
from duetime_infra.tracecontext import RUN_ID, continue_trace, start_run_span

log = logging.getLogger(__name__)

MAX_REQUEST_ID = 128

_MESSAGE_FIELDS = frozenset(
    {"schedule", "target", "attempt_timeout", "retry_policy", "misfire", "jitter_window"}
)
DEFAULT_PREVIEW_COUNT = 10
MAX_UPDATE_PREVIEW = 100
_BEFORE = timedelta(microseconds=1)


@dataclasses.dataclass
class Update:
    """What an update did (or, validated only, would do): the job as stored now, whether its
    schedule changed (a schedule sent as it is stored is no change), its next run time before,
    and, validated only, its next occurrences before and after."""

    record: JobRecord = dataclasses.field(init=False)
    schedule_changed: bool = False
    previous_next: datetime | None = None
    current: list[PreviewItem] = dataclasses.field(default_factory=list)
    updated: list[PreviewItem] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Resume:
    """What a resume did (or, validated only, would do) with the paused occurrences."""

    record: JobRecord = dataclasses.field(init=False)
    forecast: ResumeForecast = dataclasses.field(default_factory=ResumeForecast)


def upcoming(
    job_id: uuid.UUID,
    spec: JobSpec,
    state: JobState,
    pending: datetime | None,
    now: datetime,
    count: int,
    made: int,
    known: Mapping[str, CalendarRules] | None = None,
) -> list[PreviewItem]:
    """A job's next ``count`` occurrences, within the runs its schedule has left after
    ``made``: from its pending one when ACTIVE, otherwise its schedule's from ``now``; marked
    where one of its calendars among ``known`` excludes them."""
    start = pending - _BEFORE if state is JobState.ACTIVE and pending is not None else now
    calendars = job_calendars(spec.excluded_calendars, known or {})
    return job_preview(job_id, spec, made, start, count, calendars)


def _previews(
    record: JobRecord,
    write: JobWrite,
    now: datetime,
    count: int,
    known: Mapping[str, CalendarRules],
) -> tuple[list[PreviewItem], list[PreviewItem]]:
    """The job's next occurrences before and after an update."""
    made = record.scheduled_runs
    before = upcoming(
        record.job_id, record.spec, record.state, record.next_run_time, now, count, made, known
    )
    pending = write.next.nominal_time if write.next else None
    after = upcoming(record.job_id, write.spec, write.state, pending, now, count, made, known)
    return before, after


def check_note(note: str) -> None:
    problem = text_problem(note, MAX_PAUSE_NOTE)
    if problem is not None:
        raise InvalidArgument.field("note", problem)


def check_request_id(request_id: str, *, required: bool) -> None:
    if not request_id:
        if required:
            raise InvalidArgument.field("request_id", "required")
        return
    if len(request_id) > MAX_REQUEST_ID or not request_id.isprintable() or "/" in request_id:
        raise InvalidArgument.field(
            "request_id", f"at most {MAX_REQUEST_ID} printable characters, without '/'"
        )


def fingerprint(message: job_pb2.Job | str) -> bytes:
    """What a repeated request must match. A job's secret values are left out: the digest is
    stored, and a digest of a guessable secret would give it away."""
    if isinstance(message, str):
        data = message.encode()
    else:
        shown = job_pb2.Job()
        shown.CopyFrom(message)
        for values in (shown.target.http.headers, shown.target.container.env):
            for name in values:
                values[name] = REDACTED
        data = shown.SerializeToString(deterministic=True)
    return hashlib.sha256(data).digest()


def check_etag(record: JobRecord, etag: str) -> None:
    if etag and etag != record.etag:
        raise Aborted(
            "the job changed since this etag was read; read it again",
            reason="ETAG_MISMATCH",
            metadata={"current_etag": record.etag},
        )


def plan(
    job_id: uuid.UUID, spec: JobSpec, now: datetime, made: int = 0
) -> tuple[JobState, Occurrence | None, str]:
    """The state and first occurrence of a job (re)scheduled at ``now``, its schedule having
    made ``made`` runs: COMPLETED when it has nothing left to run before its end."""
    try:
        occurrence = first_occurrence(job_id, spec, now, made)
    except ScheduleError as error:
        return JobState.ERROR, None, str(error)
    if occurrence is None and has_end(spec):
        return JobState.COMPLETED, None, end_reason(spec, made)
    if occurrence is None:
        return JobState.ERROR, None, "the schedule has no future occurrence"
    return JobState.ACTIVE, occurrence, ""


def require_state(record: JobRecord, state: JobState, done: str, reason: str) -> None:
    """FailedPrecondition unless the job is in ``state``, the only one it can be ``done`` in."""
    if record.state is not state:
        article = "an" if state.value[0] in "AEIOU" else "a"
        raise FailedPrecondition(
            f"only {article} {state.value} job can be {done}; this one is {record.state.value}",
            reason=reason,
        )


def _skipped_before_update(
    record: JobRecord, pending: datetime, now: datetime
) -> SkippedSpan | None:
    """The old schedule's occurrences from ``pending`` to ``now``. One that can no longer be
    evaluated names none: that is logged, since the update must still be possible."""
    try:
        return skipped_between(to_schedule(record.spec.schedule), pending, now)
    except ScheduleError as error:
        log.warning(
            "the old schedule's skipped occurrences cannot be enumerated",
            extra={"action": "skipped_unknown", "job_id": str(record.job_id), "error": str(error)},
        )
        return None


def _secrets(spec: JobSpec) -> tuple[dict[str, SecretValue], dict[str, SecretValue]]:
    """The stored (sealed) header and env values a redacted update keeps."""
    match spec.target:
        case HttpTarget(headers=headers):
            return dict(headers), {}
        case ContainerTarget(env=env):
            return {}, dict(env)


def _check_mask(paths: list[str]) -> None:
    if not paths:
        raise InvalidArgument.field("update_mask", "required: name the fields to change")
    unknown = [p for p in paths if p not in FIELD_PATHS]
    if unknown:
        raise InvalidArgument.field(
            "update_mask",
            f"cannot update {', '.join(unknown)}; updatable: {', '.join(FIELD_PATHS)}",
        )


def _check_preview_count(count: int, validate_only: bool) -> int:
    if count and not validate_only:
        raise InvalidArgument.field("preview_count", "only with validate_only")
    if not 0 <= count <= MAX_UPDATE_PREVIEW:
        raise InvalidArgument.field("preview_count", f"must be between 1 and {MAX_UPDATE_PREVIEW}")
    return count or DEFAULT_PREVIEW_COUNT


def _decoded(record: JobRecord, job: job_pb2.Job, paths: list[str], now: datetime) -> JobSpec:
    """The job as it will be (stored fields plus the masked ones), validated, with redacted
    secrets resolved against the stored ones."""
    merged = job_pb2.Job()
    encode_job_spec(record.spec, merged)
    for path in paths:
        merged.ClearField(path)  # type: ignore[arg-type]
        if path == "labels":
            merged.labels.update(job.labels)
        elif path == "excluded_calendars":
            merged.excluded_calendars.extend(job.excluded_calendars)
        elif path in _MESSAGE_FIELDS:
            if job.HasField(path):  # type: ignore[arg-type]
                getattr(merged, path).CopyFrom(getattr(job, path))
        else:
            setattr(merged, path, getattr(job, path))
    headers, env = _secrets(record.spec)
    return decode_job_spec(merged, now=now, existing_headers=headers, existing_env=env)


def _rewritten(record: JobRecord, spec: JobSpec, series_changed: bool, now: datetime) -> JobWrite:
    """The job's state and next occurrence under its updated ``spec``. A new end alone keeps
    the series: the pending occurrence stays unless it is past the end, and a job completed
    by its end is planned again from now."""
    made = record.scheduled_runs
    if record.state is JobState.PAUSED:
        return JobWrite(
            JobState.PAUSED, spec, None, pause_time=record.pause_time, pause=record.pause
        )
    same_end = (spec.schedule, spec.max_runs) == (record.spec.schedule, record.spec.max_runs)
    if record.state is JobState.COMPLETED and not series_changed and same_end:
        return JobWrite(JobState.COMPLETED, spec, None, state_reason=record.state_reason)
    pending = record.next_run_time
    if record.state is JobState.ACTIVE and pending is not None:
        if not series_changed and past_the_end(spec, made, pending):
            return JobWrite(JobState.COMPLETED, spec, None, state_reason=end_reason(spec, made))
        if not series_changed:
            # The pending occurrence stays, whatever else changed (a new jitter window only
            # moves its effective time): an update never drops an occurrence.
            key = RunKey.scheduled(record.job_id, pending)
            return JobWrite(JobState.ACTIVE, spec, Occurrence(pending, effective_time(spec, key)))
        # A new schedule starts from now; the old one's occurrences that were already due and
        # not yet claimed are recorded, not dropped.
        skipped = skip_records(
            JobVersion.of(record),
            _skipped_before_update(record, pending, now),
            RunReason.JOB_UPDATED,
            "before the schedule changed",
        )
        state, occurrence, reason = plan(record.job_id, spec, now, made)
        updated = dataclasses.replace(JobVersion.of(record), version=record.version + 1)
        skipped += gap_records(dataclasses.replace(updated, spec=spec), now, occurrence)
        return JobWrite(state, spec, occurrence, state_reason=reason, runs=skipped)
    state, occurrence, reason = plan(record.job_id, spec, now, made)
    return JobWrite(state, spec, occurrence, state_reason=reason)


def _skipping(record: JobRecord, start: datetime, now: datetime) -> tuple[JobWrite, ResumeForecast]:
    """A resume from now: the paused stretch's occurrences are recorded SKIPPED."""
    try:
        span = skipped_between(to_schedule(record.spec.schedule), start, now)
    except ScheduleError as error:
        write = JobWrite(JobState.ERROR, record.spec, None, state_reason=str(error))
        return write, ResumeForecast()
    forecast = skip_forecast(span)
    runs = skip_records(
        JobVersion.of(record), span, RunReason.JOB_PAUSED, "while the job was paused"
    )
    if is_one_off(record.spec.schedule) and runs:
        return JobWrite(JobState.COMPLETED, record.spec, None, runs=runs), forecast
    made = record.scheduled_runs
    try:
        occurrence = next_occurrence(record.job_id, record.spec, now, made)
    except ScheduleError as error:
        write = JobWrite(JobState.ERROR, record.spec, None, state_reason=str(error), runs=runs)
        return write, forecast
    if occurrence is None:
        reason = end_reason(record.spec, made)
        return JobWrite(JobState.COMPLETED, record.spec, None, reason, runs=runs), forecast
    resumed = dataclasses.replace(JobVersion.of(record), version=record.version + 1)
    runs += gap_records(resumed, now, occurrence)
    return JobWrite(JobState.ACTIVE, record.spec, occurrence, runs=runs), forecast


def _caught_up(
    record: JobRecord, start: datetime, now: datetime
) -> tuple[JobWrite, ResumeForecast]:
    """A resume at the paused stretch's first occurrence: the scheduler's next claim applies
    the misfire policy to the stretch, as to any late occurrences."""
    made = record.scheduled_runs
    try:
        first = next_occurrence(record.job_id, record.spec, start - _BEFORE, made)
    except ScheduleError as error:
        write = JobWrite(JobState.ERROR, record.spec, None, state_reason=str(error))
        return write, ResumeForecast()
    if first is None:
        reason = end_reason(record.spec, made)
        return JobWrite(JobState.COMPLETED, record.spec, None, reason), ResumeForecast()
    forecast = catch_up_forecast(record.job_id, record.spec, first, now, made)
    return JobWrite(JobState.ACTIVE, record.spec, first), forecast


class JobOperations:
    def __init__(self, store: JobStore) -> None:
        self.store = store

    async def create(
        self, team_id: str, job: job_pb2.Job, request_id: str, by: Principal | None = None
    ) -> JobRecord:
        check_request_id(request_id, required=False)
        now = await self.store.now()
        spec = decode_job_spec(job, now=now)
        job_id = uuid.uuid4()
        partition = partition_of(job_id)
        state, occurrence, reason = plan(job_id, spec, now)
        if state is JobState.COMPLETED:
            raise InvalidArgument.field(
                "job.schedule.end_time",
                "the schedule has no occurrence left by its end_time: the job would never run",
            )
        gaps = gap_records(JobVersion(job_id, team_id, partition, 1, spec), now, occurrence)
        idem = Idempotency("CreateJob", request_id, fingerprint(job)) if request_id else None
        adding = 1 if state in STORED_STATES else None
        write = JobWrite(
            state=state,
            spec=spec,
            next=occurrence,
            state_reason=reason,
            runs=gaps,
            change=VersionChange(ChangeKind.CREATE, by),
        )
        return await self.store.create_job(
            team_id,
            job_id,
            partition,
            write,
            idem,
            now,
            lambda team: check_job_quota(team, priority=spec.priority, adding=adding),
        )

    async def update(
        self,
        team_id: str,
        job_id: uuid.UUID,
        job: job_pb2.Job,
        paths: list[str],
        by: Principal | None = None,
        *,
        validate_only: bool = False,
        preview_count: int = 0,
    ) -> Update:
        _check_mask(paths)
        count = _check_preview_count(preview_count, validate_only)
        outcome = Update()
        known = await self._preview_calendars(team_id, job_id, job, paths) if validate_only else {}

        def decide(record: JobRecord, now: datetime, team: TeamState) -> JobWrite:
            check_etag(record, job.etag)
            decoded = _decoded(record, job, paths, now)
            # A schedule sent as it is stored (a job file applied again) is no change: the
            # series keeps its anchor and the pending occurrence stays; so does a new end alone.
            stored = record.spec.schedule
            decoded = dataclasses.replace(
                decoded, schedule=updated_schedule(stored, decoded.schedule)
            )
            changed = [
                p
                for p in paths
                if p != "schedule"
                or (decoded.schedule, decoded.max_runs) != (stored, record.spec.max_runs)
            ]
            outcome.previous_next = record.next_run_time
            outcome.schedule_changed = "schedule" in changed
            series_changed = not same_series(stored, decoded.schedule)
            spec = dataclasses.replace(
                record.spec,
                **{name: getattr(decoded, name) for p in changed for name in FIELD_PATHS[p]},
            )
            write = _rewritten(record, spec, series_changed, now)
            check_job_quota(
                team,
                priority=write.spec.priority if "priority" in paths else None,
                adding=1
                if write.state in STORED_STATES and record.state not in STORED_STATES
                else None,
            )
            if validate_only:
                outcome.current, outcome.updated = _previews(record, write, now, count, known)
            fields = tuple(spec_changes(record.spec, spec))
            return dataclasses.replace(write, change=VersionChange(ChangeKind.UPDATE, by, fields))

        outcome.record = await self.store.modify_job(
            team_id, job_id, decide, validate_only=validate_only
        )
        return outcome

    async def _preview_calendars(
        self, team_id: str, job_id: uuid.UUID, job: job_pb2.Job, paths: list[str]
    ) -> dict[str, CalendarRules]:
        """The calendars a validate_only update's previews may show: the stored job's and
        those the update names."""
        names = set((await self.store.get_job(team_id, job_id)).spec.excluded_calendars)
        if "excluded_calendars" in paths:
            names |= set(job.excluded_calendars)
        return await self.store.calendars_named(team_id, names)

    async def delete(
        self, team_id: str, job_id: uuid.UUID, etag: str, by: Principal | None = None
    ) -> None:
        def decide(record: JobRecord, now: datetime, team: TeamState) -> JobWrite:
            check_etag(record, etag)
            change = VersionChange(ChangeKind.DELETE, by)
            return JobWrite(JobState.DELETED, record.spec, None, change=change)

        await self.store.modify_job(team_id, job_id, decide)

    async def pause(
        self,
        team_id: str,
        job_id: uuid.UUID,
        etag: str,
        by: Principal | None = None,
        note: str = "",
    ) -> JobRecord:
        check_note(note)

        def decide(record: JobRecord, now: datetime, team: TeamState) -> JobWrite:
            check_etag(record, etag)
            require_state(record, JobState.ACTIVE, "paused", "JOB_NOT_ACTIVE")
            # The skipped stretch starts at the pending occurrence, so none slips between.
            pause_start = record.next_run_time or now
            return JobWrite(
                JobState.PAUSED,
                record.spec,
                None,
                pause_time=pause_start,
                pause=JobPause(note, by),
                change=VersionChange(ChangeKind.PAUSE, by, note=note),
            )

        return await self.store.modify_job(team_id, job_id, decide)

    async def resume(
        self,
        team_id: str,
        job_id: uuid.UUID,
        etag: str,
        by: Principal | None = None,
        *,
        catch_up: bool = False,
        validate_only: bool = False,
    ) -> Resume:
        outcome = Resume()

        def decide(record: JobRecord, now: datetime, team: TeamState) -> JobWrite:
            check_etag(record, etag)
            require_state(record, JobState.PAUSED, "resumed", "JOB_NOT_PAUSED")
            # A paused job is stored already; resuming is refused while the team is over a
            # lowered quota, or its priority is no longer granted.
            check_job_quota(team, priority=record.spec.priority, adding=0)
            start = record.pause_time or record.update_time
            resumed = _caught_up if catch_up else _skipping
            write, outcome.forecast = resumed(record, start, now)
            return dataclasses.replace(write, change=VersionChange(ChangeKind.RESUME, by))

        outcome.record = await self.store.modify_job(
            team_id, job_id, decide, validate_only=validate_only
        )
        return outcome

    async def trigger(self, team_id: str, job_id: uuid.UUID, request_id: str) -> RunRecord:
        check_request_id(request_id, required=True)
        # The triggered run's trace starts here, linked to this call's span, with its ids.
        run_id = new_run_id()
        trace, span = start_run_span("trigger run", run_id)

        def build(record: JobRecord, now: datetime, weight: int) -> tuple[NewRun, OutboxRow]:
            key = RunKey.triggered(record.job_id, now, request_id)
            run = NewRun(
                run_id=run_id,
                key=key,
                team_id=record.team_id,
                partition=record.partition,
                effective_time=now,
                state=RunState.QUEUED,
                job_version=record.version,
                attempt_limit=record.spec.retry.max_attempts,
                priority=record.spec.priority,
                traceparent=trace.traceparent,
            )
            outbox = dispatch_row(
                run_id=run.run_id,
                key=key,
                team_id=record.team_id,
                effective_time=now,
                priority=record.spec.priority,
                traceparent=trace.traceparent,
                now=now,
                target=record.spec.target,
                team_weight=weight,
                overlap=record.spec.overlap,
            )
            return run, outbox

        idem = Idempotency("TriggerJob", request_id, fingerprint(str(job_id)))
        run = await self.store.trigger_run(team_id, job_id, idem, build)
        # A repeated request answers with the run made before: that run's trace began then.
        if run.run_id == run_id:
            span.set_attribute(RUN_ID, str(run.run_id))
            span.end()
        return run

    async def redrive(
        self, team_id: str, job_id: uuid.UUID, run_id: uuid.UUID, request_id: str
    ) -> RunRecord:
        check_request_id(request_id, required=True)

        def build(
            run: RunRecord, snapshot: JobSpec, now: datetime, weight: int
        ) -> tuple[int, OutboxRow]:
            traceparent = continue_trace(run.trace_id).traceparent
            outbox = dispatch_row(
                run_id=run.run_id,
                key=run.key,
                team_id=run.team_id,
                effective_time=run.effective_time,
                priority=snapshot.priority,
                traceparent=traceparent,
                now=now,
                target=snapshot.target,
                team_weight=weight,
                overlap=snapshot.overlap,
            )
            return snapshot.retry.max_attempts, outbox

        idem = Idempotency("RedriveRun", request_id, fingerprint(f"{job_id}/{run_id}"))
        return await self.store.redrive_run(team_id, job_id, run_id, idem, build)
