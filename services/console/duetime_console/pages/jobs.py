"""The team's jobs: the list (search, state, schedule in words, next run, recent runs), one
job (its definition, next ten occurrences with what DST does, recent runs), creating one from
the form or pasted YAML/JSON, editing with its etag, and pause / resume / trigger / delete,
each behind a confirmation page."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from urllib.parse import urlencode

from google.protobuf import field_mask_pb2
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from duetime.jobs.v1 import job_pb2, job_service_pb2
from duetime_client import describe, jobtext
from duetime_client.describe import next_run_moved
from duetime_console import jobform
from duetime_console.api import BATCH_TIMEOUT_SECONDS, ApiError
from duetime_console.filters import JOB_STATES, SCHEDULE_KINDS, BadSearch, JobSearch
from duetime_console.jobform import JobForm
from duetime_console.session import TEAM
from duetime_console.times import zone_names
from duetime_console.web import (
    Refused,
    Viewer,
    batch_outcome,
    form_text,
    local_path,
    page,
    problems_of,
)

PAGE_SIZE = 50
RECENT_RUNS = 5
ACTIONS = {
    "pause": ("Pause", "Its occurrences are skipped (recorded SKIPPED) until it is resumed."),
    "resume": (
        "Resume",
        "It runs again from now; occurrences during the pause are not caught up, unless you "
        "ask its misfire policy to decide.",
    ),
    "trigger": ("Trigger", "One run starts now, outside the schedule."),
    "delete": ("Delete", "It stops for good; its runs stay readable."),
}


def _search(request: Request) -> JobSearch:
    return JobSearch.of(request.query_params)


async def list_jobs(
    viewer: Viewer, search: JobSearch, page_token: str
) -> job_service_pb2.ListJobsResponse:
    """A page of the team's jobs matching ``search``, each with its latest runs."""
    try:
        text = search.to_filter()
    except BadSearch as bad:
        raise Refused(400, "Search not understood", f"{bad.field}: {bad.why}") from None
    request = job_service_pb2.ListJobsRequest(
        page_size=PAGE_SIZE, page_token=page_token, filter=text, recent_runs=RECENT_RUNS
    )
    try:
        return await viewer.call(viewer.api.jobs.ListJobs, request)
    except ApiError as error:
        if error.code != "INVALID_ARGUMENT":
            raise
        raise Refused(400, "Search not understood", error.details.message) from None


@page(TEAM)
async def jobs_list(request: Request, viewer: Viewer) -> Response:
    search = _search(request)
    listed = await list_jobs(viewer, search, request.query_params.get("page", ""))
    return viewer.render(
        "jobs.html",
        {
            "jobs": list(listed.jobs),
            "activities": listed.activities,
            "search": search,
            "query": urlencode(search.query()),
            "states": JOB_STATES,
            "kinds": SCHEDULE_KINDS,
            "next_page": listed.next_page_token,
        },
    )


def _bulk_filter(action: str, search: JobSearch) -> str:
    """The filter a bulk action runs on: the search, narrowed to the jobs the action can
    change (pausing active ones, resuming paused ones)."""
    state = "ACTIVE" if action == "pause" else "PAUSED"
    return JobSearch(**{**search.query(), "state": state}).to_filter()


async def _batch(
    viewer: Viewer, action: str, filter_text: str, *, validate_only: bool, note: str = ""
) -> job_service_pb2.BatchPauseJobsResponse | job_service_pb2.BatchResumeJobsResponse:
    api = viewer.api.jobs
    if action == "pause":
        pause = job_service_pb2.BatchPauseJobsRequest(
            filter=filter_text, validate_only=validate_only, note=note
        )
        return await viewer.call(api.BatchPauseJobs, pause, BATCH_TIMEOUT_SECONDS)
    resume = job_service_pb2.BatchResumeJobsRequest(filter=filter_text, validate_only=validate_only)
    return await viewer.call(api.BatchResumeJobs, resume, BATCH_TIMEOUT_SECONDS)


def _bulk_action(request: Request) -> str:
    action: str = request.path_params["action"]
    if action not in ("pause", "resume"):
        raise Refused(404, "Not found", "There is no such page.")
    return action


@page(TEAM)
async def bulk_confirm(request: Request, viewer: Viewer) -> Response:
    """How many jobs a bulk pause or resume of the search would change, before it does."""
    action, search = _bulk_action(request), _search(request)
    try:
        filter_text = _bulk_filter(action, search)
    except BadSearch as bad:
        raise Refused(400, "Search not understood", f"{bad.field}: {bad.why}") from None
    counted = await _batch(viewer, action, filter_text, validate_only=True)
    return viewer.render(
        "bulk.html",
        {
            "action": action,
            "verb": ACTIONS[action][0],
            "matched": counted.matched,
            "filter": filter_text,
            "back": "/jobs?" + urlencode(search.query()),
        },
    )


@page(TEAM)
async def bulk_act(request: Request, viewer: Viewer) -> Response:
    action = _bulk_action(request)
    fields = await viewer.form()
    filter_text, back = form_text(fields.get("filter")), local_path(form_text(fields.get("back")))
    note = form_text(fields.get("note"))
    try:
        done = await _batch(viewer, action, filter_text, validate_only=False, note=note)
    except ApiError as error:
        if error.code not in ("FAILED_PRECONDITION", "INVALID_ARGUMENT"):
            raise
        return viewer.redirect(back, f"Nothing changed: {error.details.message}")
    verb = "Paused" if action == "pause" else "Resumed"
    return viewer.redirect(back, batch_outcome(done, verb, "Not changed", "jobs"))


@page(TEAM)
async def job_detail(request: Request, viewer: Viewer) -> Response:
    name = viewer.job_name(request.path_params["job_id"])
    api = viewer.api.jobs
    job = (await viewer.call(api.GetJob, job_service_pb2.GetJobRequest(name=name))).job
    preview_request = job_service_pb2.PreviewScheduleRequest(job=name, count=10)
    runs_request = job_service_pb2.ListRunsRequest(parent=name, page_size=20)
    preview, runs = await asyncio.gather(
        viewer.call(api.PreviewSchedule, preview_request), viewer.call(api.ListRuns, runs_request)
    )
    return viewer.render(
        "job.html",
        {
            "job": job,
            "occurrences": list(preview.occurrences),
            "runs": list(runs.runs),
            "yaml": jobform.as_yaml(job),
        },
    )


async def _calendar_choices(viewer: Viewer, form: JobForm) -> list[str]:
    """The calendars the form offers: those the job names, in its order, then the team's
    others."""
    named = form.calendars
    listed = await viewer.call(
        viewer.api.jobs.ListCalendars, job_service_pb2.ListCalendarsRequest()
    )
    return named + [c.calendar_id for c in listed.calendars if c.calendar_id not in named]


async def _form_page(
    viewer: Viewer,
    form: JobForm,
    *,
    job: job_pb2.Job | None = None,
    mode: str = "form",
    yaml_text: str = "",
    request_id: str = "",
    status: int = 200,
    preview: Sequence[job_service_pb2.ScheduledOccurrence] = (),
    stale: job_pb2.Job | None = None,
    change_preview: job_service_pb2.UpdateJobResponse | None = None,
) -> Response:
    return viewer.render(
        "job_form.html",
        {
            "form": form.values,
            "problems": form.problems,
            "job": job,
            "mode": mode,
            "yaml_text": yaml_text,
            "request_id": request_id or str(uuid.uuid4()),
            "kinds": jobform.KINDS,
            "methods": jobform.METHODS,
            "zones": zone_names(),
            "fits_form": job is None or jobform.fits_form(job),
            "preview": preview,
            "stale": stale,
            "change_preview": change_preview,
            "calendars": await _calendar_choices(viewer, form) if mode == "form" else [],
            "named_calendars": form.calendars,
        },
        status,
    )


@page(TEAM)
async def job_new(request: Request, viewer: Viewer) -> Response:
    mode = "yaml" if request.query_params.get("mode") == "yaml" else "form"
    return await _form_page(viewer, JobForm(), mode=mode)


async def _preview(viewer: Viewer, form: JobForm) -> list[job_service_pb2.ScheduledOccurrence]:
    schedule = form.schedule()
    if form.problems:
        return []
    request = job_service_pb2.PreviewScheduleRequest(schedule=schedule, count=10)
    try:
        return list((await viewer.call(viewer.api.jobs.PreviewSchedule, request)).occurrences)
    except ApiError as error:
        if error.code != "INVALID_ARGUMENT":
            raise
        form.problems += problems_of(error)
        return []


def _from_yaml(text: str) -> tuple[job_pb2.Job, list[str]]:
    data = jobtext.read_mapping(text)
    return jobtext.parse_job(data), jobtext.update_paths(data)


@page(TEAM)
async def job_create(request: Request, viewer: Viewer) -> Response:
    fields = await viewer.form()
    mode, request_id = form_text(fields.get("mode")), form_text(fields.get("request_id"))
    form, yaml_text = JobForm.from_fields(fields), str(fields.get("yaml", ""))
    if mode == "form" and fields.get("action") == "preview":
        preview = await _preview(viewer, form)
        return await _form_page(viewer, form, request_id=request_id, preview=preview)
    try:
        job = _from_yaml(yaml_text)[0] if mode == "yaml" else form.apply(job_pb2.Job())
    except jobtext.JobTextError as error:
        form.problem(error.field, error.description)
        job = job_pb2.Job()
    if not form.problems:
        create = job_service_pb2.CreateJobRequest(job=job, request_id=request_id)
        try:
            created = (await viewer.call(viewer.api.jobs.CreateJob, create)).job
        except ApiError as error:
            if error.code not in ("INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "ALREADY_EXISTS"):
                raise
            form.problems += problems_of(error)
        else:
            path = "/jobs/" + created.job_id
            return viewer.redirect(path, f"Created job {created.display_name or created.job_id}.")
    return await _form_page(
        viewer, form, mode=mode, yaml_text=yaml_text, request_id=request_id, status=422
    )


async def _job(viewer: Viewer, job_id: str) -> job_pb2.Job:
    request = job_service_pb2.GetJobRequest(name=viewer.job_name(job_id))
    return (await viewer.call(viewer.api.jobs.GetJob, request)).job


@page(TEAM)
async def job_edit(request: Request, viewer: Viewer) -> Response:
    job = await _job(viewer, request.path_params["job_id"])
    mode = "yaml" if request.query_params.get("mode") == "yaml" else "form"
    if not jobform.fits_form(job):
        mode = "yaml"
    return await _form_page(
        viewer, JobForm.of_job(job), job=job, mode=mode, yaml_text=jobform.as_yaml(job)
    )


def _edit(
    form: JobForm, shown: job_pb2.Job, mode: str, yaml_text: str
) -> tuple[job_pb2.Job, list[str]]:
    """The fields an edit changes and their mask paths; a problem on ``form`` if none."""
    try:
        if mode == "yaml":
            changes, paths = _from_yaml(yaml_text)
        else:
            changes, paths = form.apply(shown), list(jobform.FORM_PATHS)
    except jobtext.JobTextError as error:
        form.problem(error.field, error.description)
        return job_pb2.Job(), []
    if not paths:
        form.problem("job", "nothing to change: give at least one field")
    return changes, paths


async def _send_update(
    viewer: Viewer, form: JobForm, update: job_service_pb2.UpdateJobRequest
) -> tuple[job_service_pb2.UpdateJobResponse | None, bool]:
    """The update's answer, or None with the reason on ``form``; and whether it was refused as
    stale (its etag no longer the job's)."""
    try:
        return await viewer.call(viewer.api.jobs.UpdateJob, update), False
    except ApiError as error:
        if error.reason == "ETAG_MISMATCH":
            return None, True
        if error.code not in ("INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "PERMISSION_DENIED"):
            raise
        form.problems += problems_of(error)
        return None, False


@page(TEAM)
async def job_update(request: Request, viewer: Viewer) -> Response:
    """An edit sent with the etag of the version it started from: if the job changed since,
    nothing is saved and the page says so, keeping the edit. Previewed, it is sent with
    ``validate_only``: the page shows the next runs before and after, nothing saved."""
    job_id = request.path_params["job_id"]
    fields = await viewer.form()
    mode, etag = form_text(fields.get("mode")), form_text(fields.get("etag"))
    form, yaml_text = JobForm.from_fields(fields), str(fields.get("yaml", ""))
    stored = await _job(viewer, job_id)
    shown = job_pb2.Job()
    shown.CopyFrom(stored)
    shown.etag = etag
    changes, paths = _edit(form, shown, mode, yaml_text)
    previewing, stale = fields.get("action") == "preview", False
    if not form.problems:
        changes.name, changes.etag = stored.name, etag
        update = job_service_pb2.UpdateJobRequest(
            job=changes,
            update_mask=field_mask_pb2.FieldMask(paths=paths),
            validate_only=previewing,
        )
        updated, stale = await _send_update(viewer, form, update)
        if updated is not None and previewing:
            return await _form_page(
                viewer, form, job=shown, mode=mode, yaml_text=yaml_text, change_preview=updated
            )
        if updated is not None:
            return viewer.redirect(f"/jobs/{job_id}", f"Saved. {next_run_moved(updated)}")
    return await _form_page(
        viewer,
        form,
        job=shown,
        mode=mode,
        yaml_text=yaml_text,
        stale=stored if stale else None,
        status=409 if stale else 422,
    )


async def _resume_told(
    viewer: Viewer, job: job_pb2.Job, catch_up: bool
) -> job_service_pb2.PausedOccurrences | None:
    """What resuming ``job`` now would do with its pause's occurrences (None: it cannot be
    resumed; the action's own call says why)."""
    told = job_service_pb2.ResumeJobRequest(name=job.name, validate_only=True, catch_up=catch_up)
    try:
        return (await viewer.call(viewer.api.jobs.ResumeJob, told)).paused_occurrences
    except ApiError as error:
        if error.code not in ("FAILED_PRECONDITION", "RESOURCE_EXHAUSTED"):
            raise
        return None


@page(TEAM)
async def job_confirm(request: Request, viewer: Viewer) -> Response:
    """What the action will do (for a resume, with the paused occurrences told), and the
    button that does it (no script needed)."""
    action = request.path_params["action"]
    if action not in ACTIONS:
        raise Refused(404, "Not found", "There is no such page.")
    job = await _job(viewer, request.path_params["job_id"])
    verb, consequence = ACTIONS[action]
    skipping = catching_up = None
    if action == "resume":
        skipping, catching_up = await asyncio.gather(
            _resume_told(viewer, job, False), _resume_told(viewer, job, True)
        )
    return viewer.render(
        "confirm.html",
        {
            "job": job,
            "action": action,
            "verb": verb,
            "consequence": consequence,
            "request_id": str(uuid.uuid4()),
            "skipping": skipping,
            "catching_up": catching_up,
        },
    )


@page(TEAM)
async def job_act(request: Request, viewer: Viewer) -> Response:
    action, job_id = request.path_params["action"], request.path_params["job_id"]
    if action not in ACTIONS:
        raise Refused(404, "Not found", "There is no such page.")
    name = viewer.job_name(job_id)
    fields = await viewer.form()
    etag, request_id = form_text(fields.get("etag")), form_text(fields.get("request_id"))
    api = viewer.api.jobs
    try:
        if action == "pause":
            note = form_text(fields.get("note"))
            pause = job_service_pb2.PauseJobRequest(name=name, etag=etag, note=note)
            await viewer.call(api.PauseJob, pause)
            return viewer.redirect(f"/jobs/{job_id}", "Paused.")
        if action == "resume":
            catch_up = fields.get("catch_up") == "on"
            request_resume = job_service_pb2.ResumeJobRequest(
                name=name, etag=etag, catch_up=catch_up
            )
            resumed = await viewer.call(api.ResumeJob, request_resume)
            told = describe.paused_occurrences(resumed.paused_occurrences)
            return viewer.redirect(f"/jobs/{job_id}", "Resumed: " + "; ".join(told) + ".")
        if action == "trigger":
            trigger = job_service_pb2.TriggerJobRequest(
                name=name, request_id=request_id or str(uuid.uuid4())
            )
            run = (await viewer.call(api.TriggerJob, trigger)).run
            return viewer.redirect(f"/runs/{job_id}/{run.run_id}", "Triggered: this run is new.")
        await viewer.call(api.DeleteJob, job_service_pb2.DeleteJobRequest(name=name, etag=etag))
        return viewer.redirect("/jobs", "Deleted.")
    except ApiError as error:
        if error.code not in (
            "ABORTED",
            "FAILED_PRECONDITION",
            "RESOURCE_EXHAUSTED",
            "INVALID_ARGUMENT",
        ):
            raise
        message = error.details.message
        if error.reason == "ETAG_MISMATCH":
            message = "The job changed since you opened it: look at it again, then retry."
        return viewer.redirect(f"/jobs/{job_id}", f"Not done: {message}")


routes = [
    Route("/jobs", jobs_list, methods=["GET"]),
    Route("/jobs/bulk/{action}", bulk_confirm, methods=["GET"]),
    Route("/jobs/bulk/{action}", bulk_act, methods=["POST"]),
    Route("/jobs/new", job_new, methods=["GET"]),
    Route("/jobs/new", job_create, methods=["POST"]),
    Route("/jobs/{job_id}", job_detail, methods=["GET"]),
    Route("/jobs/{job_id}/edit", job_edit, methods=["GET"]),
    Route("/jobs/{job_id}/edit", job_update, methods=["POST"]),
    Route("/jobs/{job_id}/{action}", job_confirm, methods=["GET"]),
    Route("/jobs/{job_id}/{action}", job_act, methods=["POST"]),
]
