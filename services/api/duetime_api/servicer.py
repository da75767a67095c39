"""JobService over gRPC: convert the request, call one operation, convert the answer."""

from __future__ import annotations

from typing import Any

from grpc import aio

from duetime.jobs.v1 import job_pb2, job_service_pb2, job_service_pb2_grpc, run_pb2
from duetime_api.backfills import BackfillAsk, backfill
from duetime_api.batches import Batches, encode_batch
from duetime_api.calendars import CalendarCalls
from duetime_api.history import History
from duetime_api.jobs import JobOperations
from duetime_api.lists import Lists, activity_count, check_activity_page
from duetime_api.names import (
    check_own_team,
    parse_job_name,
    parse_job_parent,
    parse_run_name,
    resolve_job,
    resolve_parent,
)
from duetime_api.pagination import make_key_token, make_token, read_key_page, read_page
from duetime_core.backfill import BackfillOverlap
from duetime_core.errors import InvalidArgument
from duetime_core.jobspec import JobState
from duetime_core.preview import job_preview, preview, preview_item
from duetime_core.records import RunState
from duetime_infra.archive.reader import ArchiveReader
from duetime_infra.codec.explain_codec import encode_explanation, encode_forecast, read_asked
from duetime_infra.codec.history_codec import encode_version
from duetime_infra.codec.preview_codec import decode_preview_schedule, encode_occurrences
from duetime_infra.codec.quota_codec import encode_quota, encode_usage, team_name
from duetime_infra.codec.records_codec import encode_job, encode_run
from duetime_infra.codec.timeconv import datetime_to_timestamp
from duetime_infra.codec.violations import Violations, read_timestamp
from duetime_infra.grpc.auth import current_principal, current_team

Context = aio.ServicerContext[Any, Any]

DEFAULT_PREVIEW_COUNT = 10


def _job_state(value: int, field: str) -> JobState | None:
    if value == job_pb2.JOB_STATE_UNSPECIFIED:
        return None
    if value not in job_pb2.JobState.values():
        raise InvalidArgument.field(field, f"unknown value {value}")
    return JobState(job_pb2.JobState.Name(value).removeprefix("JOB_STATE_"))  # type: ignore[arg-type]


def _run_state(value: int, field: str) -> RunState | None:
    if value == run_pb2.RUN_STATE_UNSPECIFIED:
        return None
    if value not in run_pb2.RunState.values():
        raise InvalidArgument.field(field, f"unknown value {value}")
    return RunState(run_pb2.RunState.Name(value).removeprefix("RUN_STATE_"))  # type: ignore[arg-type]


_OVERLAPS = {
    job_service_pb2.BACKFILL_OVERLAP_UNSPECIFIED: BackfillOverlap.ALL,
    job_service_pb2.BACKFILL_OVERLAP_ALL: BackfillOverlap.ALL,
    job_service_pb2.BACKFILL_OVERLAP_SKIP_RAN: BackfillOverlap.SKIP_RAN,
    job_service_pb2.BACKFILL_OVERLAP_ONE_AT_A_TIME: BackfillOverlap.ONE_AT_A_TIME,
}


def _backfill_ask(request: job_service_pb2.BackfillJobRequest) -> BackfillAsk:
    v = Violations()
    start = end = None
    if request.HasField("start_time"):
        start = read_timestamp(v, "start_time", request.start_time)
    if request.HasField("end_time"):
        end = read_timestamp(v, "end_time", request.end_time)
    overlap = _OVERLAPS.get(request.overlap)
    if overlap is None:
        v.add("overlap", f"unknown value {request.overlap}")
    v.raise_if_any()
    assert overlap is not None
    return BackfillAsk(start, end, overlap, request.validate_only, request.request_id)


def _version_number(token_key: str | None) -> int | None:
    if token_key is None:
        return None
    if not token_key.isdigit():
        raise InvalidArgument.field("page_token", "not a page token issued by this API")
    return int(token_key)


class JobServicer(job_service_pb2_grpc.JobServiceServicer):
    def __init__(self, jobs: JobOperations, archive: ArchiveReader | None = None) -> None:
        self._jobs = jobs
        self._lists = Lists(jobs.store, archive)
        self._batches = Batches(jobs)
        self._history = History(jobs.store)
        self._calendars = CalendarCalls(jobs.store.calendars)

    async def CreateJob(
        self, request: job_service_pb2.CreateJobRequest, context: Context
    ) -> job_service_pb2.CreateJobResponse:
        team = current_team()
        check_own_team(request.parent, team, "parent")
        if not request.HasField("job"):
            raise InvalidArgument.field("job", "required")
        record = await self._jobs.create(team, request.job, request.request_id, current_principal())
        return job_service_pb2.CreateJobResponse(job=encode_job(record))

    async def GetJob(
        self, request: job_service_pb2.GetJobRequest, context: Context
    ) -> job_service_pb2.GetJobResponse:
        team = current_team()
        job_id = resolve_job(team, request.name, request.job_id)
        record = await self._jobs.store.get_job(team, job_id)
        return job_service_pb2.GetJobResponse(job=encode_job(record))

    async def ListJobs(
        self, request: job_service_pb2.ListJobsRequest, context: Context
    ) -> job_service_pb2.ListJobsResponse:
        team = current_team()
        check_own_team(request.parent, team, "parent")
        state = _job_state(request.state, "state")
        recent = activity_count(request.recent_runs, "recent_runs")
        upcoming = activity_count(request.upcoming_runs, "upcoming_runs")
        check_activity_page(request.page_size, recent, upcoming)
        scope = f"jobs/{team}/{state}/{request.filter}"
        page = read_page(scope, request.page_size, request.page_token)
        records = await self._lists.jobs(team, state, request.filter, page)
        token = ""
        if len(records) == page.limit:
            token = make_token(scope, records[-1].create_time, records[-1].job_id)
        response = job_service_pb2.ListJobsResponse(
            jobs=[encode_job(r) for r in records], next_page_token=token
        )
        if recent or upcoming:
            activities = await self._lists.activity(records, recent, upcoming)
            for job, record in zip(response.jobs, records, strict=True):
                activity = activities[record.job_id]
                out = response.activities[job.name]
                out.recent_runs.extend(encode_run(r) for r in activity.recent)
                encode_occurrences(activity.upcoming, out.upcoming_runs)
        return response

    async def UpdateJob(
        self, request: job_service_pb2.UpdateJobRequest, context: Context
    ) -> job_service_pb2.UpdateJobResponse:
        team = current_team()
        if not request.HasField("job"):
            raise InvalidArgument.field("job", "required")
        job_id = parse_job_name(request.job.name, team, field="job.name")
        update = await self._jobs.update(
            team,
            job_id,
            request.job,
            list(request.update_mask.paths),
            current_principal(),
            validate_only=request.validate_only,
            preview_count=request.preview_count,
        )
        response = job_service_pb2.UpdateJobResponse(
            job=encode_job(update.record), schedule_changed=update.schedule_changed
        )
        if update.previous_next is not None:
            datetime_to_timestamp(update.previous_next, response.previous_next_run_time)
        encode_occurrences(update.current, response.current_occurrences)
        encode_occurrences(update.updated, response.updated_occurrences)
        return response

    async def DeleteJob(
        self, request: job_service_pb2.DeleteJobRequest, context: Context
    ) -> job_service_pb2.DeleteJobResponse:
        team = current_team()
        job_id = resolve_job(team, request.name, request.job_id)
        await self._jobs.delete(team, job_id, request.etag, current_principal())
        return job_service_pb2.DeleteJobResponse()

    async def PauseJob(
        self, request: job_service_pb2.PauseJobRequest, context: Context
    ) -> job_service_pb2.PauseJobResponse:
        team = current_team()
        job_id = resolve_job(team, request.name, request.job_id)
        record = await self._jobs.pause(
            team, job_id, request.etag, current_principal(), request.note
        )
        return job_service_pb2.PauseJobResponse(job=encode_job(record))

    async def ResumeJob(
        self, request: job_service_pb2.ResumeJobRequest, context: Context
    ) -> job_service_pb2.ResumeJobResponse:
        team = current_team()
        job_id = resolve_job(team, request.name, request.job_id)
        resumed = await self._jobs.resume(
            team,
            job_id,
            request.etag,
            current_principal(),
            catch_up=request.catch_up,
            validate_only=request.validate_only,
        )
        record = resumed.record
        response = job_service_pb2.ResumeJobResponse(job=encode_job(record))
        encode_forecast(
            resumed.forecast,
            response.paused_occurrences,
            lambda o: preview_item(record.spec.schedule, o.nominal_time, (job_id, record.spec)),
        )
        return response

    async def TriggerJob(
        self, request: job_service_pb2.TriggerJobRequest, context: Context
    ) -> job_service_pb2.TriggerJobResponse:
        team = current_team()
        run = await self._jobs.trigger(team, parse_job_name(request.name, team), request.request_id)
        return job_service_pb2.TriggerJobResponse(run=encode_run(run))

    async def BackfillJob(
        self, request: job_service_pb2.BackfillJobRequest, context: Context
    ) -> job_service_pb2.BackfillJobResponse:
        team = current_team()
        job_id = parse_job_name(request.name, team)
        done = await backfill(self._jobs.store, team, job_id, _backfill_ask(request))
        response = job_service_pb2.BackfillJobResponse(
            occurrence_count=len(done.plan.occurrences),
            run_count=done.made,
            skipped_count=done.plan.skipped,
            excluded_count=len(done.plan.excluded),
        )
        if done.plan.occurrences:
            datetime_to_timestamp(done.plan.occurrences[0], response.first_occurrence_time)
            datetime_to_timestamp(done.plan.occurrences[-1], response.last_occurrence_time)
        return response

    async def ListRuns(
        self, request: job_service_pb2.ListRunsRequest, context: Context
    ) -> job_service_pb2.ListRunsResponse:
        team = current_team()
        job_id = resolve_parent(team, request.parent, request.job_id)
        state = _run_state(request.state, "state")
        scope = f"runs/{team}/{job_id}/{state}/{request.filter}"
        page = read_page(scope, request.page_size, request.page_token)
        runs = await self._lists.runs(team, job_id, state, request.filter, page)
        token = ""
        if len(runs) == page.limit:
            token = make_token(scope, runs[-1].key.nominal_time, runs[-1].run_id)
        return job_service_pb2.ListRunsResponse(
            runs=[encode_run(r) for r in runs], next_page_token=token
        )

    async def GetRun(
        self, request: job_service_pb2.GetRunRequest, context: Context
    ) -> job_service_pb2.GetRunResponse:
        team = current_team()
        job_id, run_id = parse_run_name(request.name, team)
        run = await self._lists.run(team, job_id, run_id)
        return job_service_pb2.GetRunResponse(run=encode_run(run))

    async def RedriveRun(
        self, request: job_service_pb2.RedriveRunRequest, context: Context
    ) -> job_service_pb2.RedriveRunResponse:
        team = current_team()
        job_id, run_id = parse_run_name(request.name, team)
        run = await self._jobs.redrive(team, job_id, run_id, request.request_id)
        return job_service_pb2.RedriveRunResponse(run=encode_run(run))

    async def PreviewSchedule(
        self, request: job_service_pb2.PreviewScheduleRequest, context: Context
    ) -> job_service_pb2.PreviewScheduleResponse:
        team = current_team()
        count = request.count or DEFAULT_PREVIEW_COUNT
        if not 1 <= count <= 1000:
            raise InvalidArgument.field("count", "must be between 1 and 1000")
        now = await self._jobs.store.now()
        start = now
        if request.HasField("start_time"):
            v = Violations()
            read = read_timestamp(v, "start_time", request.start_time)
            v.raise_if_any()
            assert read is not None
            start = read
        source = request.WhichOneof("source")
        if source == "job":
            job_id = parse_job_name(request.job, team, field="job")
            record = await self._jobs.store.get_job(team, job_id)
            calendars = await self._jobs.store.calendars_for(team, record.spec)
            items = job_preview(job_id, record.spec, record.scheduled_runs, start, count, calendars)
        elif source == "schedule":
            window = request.jitter_window if request.HasField("jitter_window") else None
            spec, max_runs = decode_preview_schedule(request.schedule, window, now=now)
            items = preview(spec, start, count, left=max_runs)
        else:
            raise InvalidArgument.field("source", "set exactly one of schedule or job")
        response = job_service_pb2.PreviewScheduleResponse()
        encode_occurrences(items, response.occurrences)
        return response

    async def ExplainOccurrence(
        self, request: job_service_pb2.ExplainOccurrenceRequest, context: Context
    ) -> job_service_pb2.ExplainOccurrenceResponse:
        team = current_team()
        job_id = parse_job_name(request.job, team, field="job")
        found = await self._history.explain(team, job_id, read_asked(request))
        return encode_explanation(found, encode_run)

    async def ListJobVersions(
        self, request: job_service_pb2.ListJobVersionsRequest, context: Context
    ) -> job_service_pb2.ListJobVersionsResponse:
        team = current_team()
        job_id = parse_job_name(request.parent, team, field="parent")
        scope = f"versions/{team}/{job_id}"
        after, limit = read_key_page(scope, request.page_size, request.page_token)
        before = _version_number(after)
        versions, next_before = await self._history.versions(team, job_id, before, limit)
        return job_service_pb2.ListJobVersionsResponse(
            versions=[encode_version(team, v, changed) for v, changed in versions],
            next_page_token=make_key_token(scope, str(next_before)) if next_before else "",
        )

    async def GetTeamQuota(
        self, request: job_service_pb2.GetTeamQuotaRequest, context: Context
    ) -> job_service_pb2.GetTeamQuotaResponse:
        team = current_team()
        check_own_team(request.name, team, "name")
        state, now = await self._jobs.store.team_quota(team)
        return job_service_pb2.GetTeamQuotaResponse(
            name=team_name(team), quota=encode_quota(state.quota), usage=encode_usage(state, now)
        )

    async def BatchPauseJobs(
        self, request: job_service_pb2.BatchPauseJobsRequest, context: Context
    ) -> job_service_pb2.BatchPauseJobsResponse:
        team = current_team()
        check_own_team(request.parent, team, "parent")
        batch = await self._batches.pause(
            team,
            request.names,
            request.filter,
            request.validate_only,
            current_principal(),
            request.note,
        )
        return encode_batch(batch, job_service_pb2.BatchPauseJobsResponse())

    async def BatchResumeJobs(
        self, request: job_service_pb2.BatchResumeJobsRequest, context: Context
    ) -> job_service_pb2.BatchResumeJobsResponse:
        team = current_team()
        check_own_team(request.parent, team, "parent")
        batch = await self._batches.resume(
            team, request.names, request.filter, request.validate_only, current_principal()
        )
        return encode_batch(batch, job_service_pb2.BatchResumeJobsResponse())

    async def BatchRedriveRuns(
        self, request: job_service_pb2.BatchRedriveRunsRequest, context: Context
    ) -> job_service_pb2.BatchRedriveRunsResponse:
        team = current_team()
        parent = None
        if request.parent or request.filter:
            parent = parse_job_parent(request.parent, team, field="parent")
        batch = await self._batches.redrive(
            team,
            parent,
            request.names,
            request.filter,
            request.validate_only,
            request.request_id,
        )
        return encode_batch(batch, job_service_pb2.BatchRedriveRunsResponse())

    async def CreateCalendar(
        self, request: job_service_pb2.CreateCalendarRequest, context: Context
    ) -> job_service_pb2.CreateCalendarResponse:
        team = current_team()
        check_own_team(request.parent, team, "parent")
        calendar = await self._calendars.create(team, request)
        return job_service_pb2.CreateCalendarResponse(calendar=calendar)

    async def GetCalendar(
        self, request: job_service_pb2.GetCalendarRequest, context: Context
    ) -> job_service_pb2.GetCalendarResponse:
        calendar = await self._calendars.get(current_team(), request.name)
        return job_service_pb2.GetCalendarResponse(calendar=calendar)

    async def ListCalendars(
        self, request: job_service_pb2.ListCalendarsRequest, context: Context
    ) -> job_service_pb2.ListCalendarsResponse:
        team = current_team()
        check_own_team(request.parent, team, "parent")
        calendars = await self._calendars.list_calendars(team)
        return job_service_pb2.ListCalendarsResponse(calendars=calendars)

    async def UpdateCalendar(
        self, request: job_service_pb2.UpdateCalendarRequest, context: Context
    ) -> job_service_pb2.UpdateCalendarResponse:
        calendar = await self._calendars.update(current_team(), request)
        return job_service_pb2.UpdateCalendarResponse(calendar=calendar)

    async def DeleteCalendar(
        self, request: job_service_pb2.DeleteCalendarRequest, context: Context
    ) -> job_service_pb2.DeleteCalendarResponse:
        await self._calendars.delete(current_team(), request.name, request.etag)
        return job_service_pb2.DeleteCalendarResponse()
