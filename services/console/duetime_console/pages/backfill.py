"""Backfilling a job (BackfillJob): a range typed on a clock of the viewer's choosing (the
schedule's zone by default) and an overlap policy, counted first (``validate_only``: how many
occurrences, from when to when, how many already ran), then made once confirmed."""

from __future__ import annotations

import uuid

from google.protobuf.timestamp_pb2 import Timestamp
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from duetime.jobs.v1 import job_service_pb2 as svc
from duetime_console.api import BATCH_TIMEOUT_SECONDS, ApiError
from duetime_console.filters import BadSearch, utc_instant
from duetime_console.pages.history import schedule_zone
from duetime_console.session import TEAM
from duetime_console.web import Refused, Viewer, form_text, page

OVERLAPS = {
    "ALL": "All at once, as the team's quota lets them go",
    "SKIP_RAN": "All at once, leaving out occurrences that succeeded or are running",
    "ONE_AT_A_TIME": "One at a time, oldest first, each after the previous ended",
}


def _instant(text: str, zone: str, field: str) -> Timestamp:
    stamp = Timestamp()
    try:
        stamp.FromJsonString(utc_instant(text, zone, field))
    except BadSearch as bad:
        raise Refused(400, "Time not understood", f"{bad.field}: {bad.why}") from None
    return stamp


def _request(name: str, start: str, end: str, zone: str, overlap: str) -> svc.BackfillJobRequest:
    if overlap not in OVERLAPS:
        raise Refused(400, "Overlap not understood", f"overlap: one of {', '.join(OVERLAPS)}")
    return svc.BackfillJobRequest(
        name=name,
        start_time=_instant(start, zone, "from"),
        end_time=_instant(end, zone, "to"),
        overlap=svc.BackfillOverlap.Value(f"BACKFILL_OVERLAP_{overlap}"),
    )


@page(TEAM)
async def job_backfill(request: Request, viewer: Viewer) -> Response:
    """The form, and once a range is given, its count with the button that makes the runs."""
    name = viewer.job_name(request.path_params["job_id"])
    api = viewer.api.jobs
    job = (await viewer.call(api.GetJob, svc.GetJobRequest(name=name))).job
    params = request.query_params
    start, end = params.get("from", "").strip(), params.get("to", "").strip()
    zone = params.get("zone", "").strip() or schedule_zone(job)
    overlap = params.get("overlap", "ALL").strip()
    counted, asked, problem = None, None, ""
    if start and end:
        asked = _request(name, start, end, zone, overlap)
        asked.validate_only = True
        try:
            counted = await viewer.call(api.BackfillJob, asked, BATCH_TIMEOUT_SECONDS)
        except ApiError as error:
            if error.code != "INVALID_ARGUMENT":
                raise
            problem = error.details.message
    context = {
        "job": job,
        "start": start,
        "end": end,
        "ask_zone": zone,
        "overlap": overlap,
        "overlaps": OVERLAPS,
        "counted": counted,
        "asked": asked,
        "problem": problem,
        "request_id": str(uuid.uuid4()),
    }
    return viewer.render("backfill.html", context, 400 if problem else 200)


@page(TEAM)
async def job_backfill_make(request: Request, viewer: Viewer) -> Response:
    job_id = request.path_params["job_id"]
    fields = await viewer.form()
    made = _request(
        viewer.job_name(job_id),
        form_text(fields.get("start_time")),
        form_text(fields.get("end_time")),
        "UTC",
        form_text(fields.get("overlap")),
    )
    made.request_id = form_text(fields.get("request_id")) or str(uuid.uuid4())
    try:
        done = await viewer.call(viewer.api.jobs.BackfillJob, made, BATCH_TIMEOUT_SECONDS)
    except ApiError as error:
        if error.code not in ("INVALID_ARGUMENT", "ABORTED", "ALREADY_EXISTS"):
            raise
        return viewer.redirect(f"/jobs/{job_id}", f"Not done: {error.details.message}")
    return viewer.redirect(
        f"/runs?job={job_id}&origin=BACKFILL",
        f"Backfilled: {done.run_count} runs made; the team's quota paces them.",
    )


routes = [
    Route("/jobs/{job_id}/backfill", job_backfill, methods=["GET"]),
    Route("/jobs/{job_id}/backfill", job_backfill_make, methods=["POST"]),
]
