"""A job's past, asked about: why an occurrence ran or did not (ExplainOccurrence, asked as a
time on a clock of the viewer's choosing, or from a run's page as its instant), and its change
history (ListJobVersions: who changed what, when, each version's definition)."""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from duetime.jobs.v1 import job_pb2, job_service_pb2
from duetime_console import jobform
from duetime_console.api import ApiError
from duetime_console.session import TEAM
from duetime_console.times import zone_of
from duetime_console.web import Refused, Viewer, page

HISTORY_PAGE = 50


def wall_clock(moment: datetime, zone: str) -> str:
    """``moment`` as the form's field shows it: on ``zone``'s clock, to the second."""
    return moment.astimezone(zone_of(zone)).strftime("%Y-%m-%dT%H:%M:%S")


def schedule_zone(job: job_pb2.Job) -> str:
    """The zone the job's schedule reads wall clocks in (UTC for one without)."""
    schedule = job.schedule
    if schedule.WhichOneof("kind") == "cron":
        return schedule.cron.time_zone
    if schedule.WhichOneof("kind") == "at" and schedule.at.time_zone:
        return schedule.at.time_zone
    return "UTC"


def _explain_request(
    name: str, local: str, zone: str, instant: str
) -> job_service_pb2.ExplainOccurrenceRequest:
    request = job_service_pb2.ExplainOccurrenceRequest(job=name)
    if instant:
        try:
            moment = datetime.fromisoformat(instant)
        except ValueError:
            raise Refused(400, "Time not understood", f"{instant!r} is no RFC 3339 time") from None
        request.time.FromDatetime(moment.astimezone(UTC) if moment.tzinfo else moment)
    else:
        request.local_time, request.time_zone = local, zone
    return request


@page(TEAM)
async def job_why(request: Request, viewer: Viewer) -> Response:
    """The form (a wall-clock time and its zone), and the answer once asked."""
    name = viewer.job_name(request.path_params["job_id"])
    api = viewer.api.jobs
    job = (await viewer.call(api.GetJob, job_service_pb2.GetJobRequest(name=name))).job
    params = request.query_params
    local, instant = params.get("at", "").strip(), params.get("time", "").strip()
    zone = params.get("zone", "").strip() or schedule_zone(job)
    answer, problem = None, ""
    if local or instant:
        try:
            explained = _explain_request(name, local, zone, instant)
            answer = await viewer.call(api.ExplainOccurrence, explained)
        except ApiError as error:
            if error.code != "INVALID_ARGUMENT":
                raise
            problem = error.details.message
    if answer is not None and not local:
        local = wall_clock(answer.time.ToDatetime(UTC), zone)
    context = {"job": job, "at": local, "ask_zone": zone, "answer": answer, "problem": problem}
    return viewer.render("why.html", context, 400 if problem else 200)


@page(TEAM)
async def job_history(request: Request, viewer: Viewer) -> Response:
    name = viewer.job_name(request.path_params["job_id"])
    api = viewer.api.jobs
    job = (await viewer.call(api.GetJob, job_service_pb2.GetJobRequest(name=name))).job
    listing = job_service_pb2.ListJobVersionsRequest(
        parent=name, page_size=HISTORY_PAGE, page_token=request.query_params.get("page", "")
    )
    versions = await viewer.call(api.ListJobVersions, listing)
    return viewer.render(
        "history.html",
        {
            "job": job,
            "versions": list(versions.versions),
            "next_page": versions.next_page_token,
            "yaml_of": jobform.as_yaml,
        },
    )


routes = [
    Route("/jobs/{job_id}/why", job_why, methods=["GET"]),
    Route("/jobs/{job_id}/history", job_history, methods=["GET"]),
]
