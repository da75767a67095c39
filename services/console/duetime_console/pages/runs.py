"""Runs: across the team (filtered by state, origin, reason, scheduled-time range, job), one
run as a timeline of its attempts, the dead letters with bulk redrive (counted first), and
the team's quota with the runs it holds."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from duetime.jobs.v1 import job_pb2, job_service_pb2, run_pb2
from duetime_console import timeline
from duetime_console.api import BATCH_TIMEOUT_SECONDS, ApiError
from duetime_console.filters import ORIGINS, RUN_STATES, BadSearch, RunSearch
from duetime_console.session import TEAM
from duetime_console.web import (
    Refused,
    Viewer,
    batch_outcome,
    form_text,
    local_path,
    page,
    uuid_or_404,
)

PAGE_SIZE = 50
# Names looked up at once for one page of runs (a page names at most PAGE_SIZE jobs).
_FAN_OUT = 10
HELD = "state = WAITING AND (reason = QUOTA OR reason = FAIR_SHARE)"


def _parent(viewer: Viewer, job_id: str) -> str:
    if job_id:
        return viewer.job_name(job_id)
    return f"teams/{viewer.session.team}/jobs/-"


def _filter(viewer: Viewer, search: RunSearch, state: str = "") -> str:
    try:
        return search.to_filter(viewer.zone, state=state)
    except BadSearch as bad:
        raise Refused(400, "Search not understood", f"{bad.field}: {bad.why}") from None


async def list_runs(
    viewer: Viewer, parent: str, filter_text: str, page_token: str = ""
) -> job_service_pb2.ListRunsResponse:
    request = job_service_pb2.ListRunsRequest(
        parent=parent, filter=filter_text, page_size=PAGE_SIZE, page_token=page_token
    )
    try:
        return await viewer.call(viewer.api.jobs.ListRuns, request)
    except ApiError as error:
        if error.code != "INVALID_ARGUMENT":
            raise
        raise Refused(400, "Search not understood", error.details.message) from None


async def job_names(viewer: Viewer, runs: Iterable[run_pb2.Run]) -> dict[str, str]:
    """The display name of each run's job (its id for a deleted one)."""
    gate = asyncio.Semaphore(_FAN_OUT)
    ids = sorted({run.job_id for run in runs})

    async def one(job_id: str) -> str:
        request = job_service_pb2.GetJobRequest(name=viewer.job_name(job_id))
        async with gate:
            try:
                job = (await viewer.call(viewer.api.jobs.GetJob, request)).job
            except ApiError as error:
                if error.code != "NOT_FOUND":
                    raise
                return f"{job_id} (deleted)"
        return job.display_name or job_id

    found = await asyncio.gather(*(one(job_id) for job_id in ids))
    return dict(zip(ids, found, strict=True))


async def _runs_page(request: Request, viewer: Viewer, template: str, state: str) -> Response:
    search = RunSearch.of(request.query_params)
    if search.job:
        uuid_or_404(search.job, "job")
    listed = await list_runs(
        viewer,
        _parent(viewer, search.job),
        _filter(viewer, search, state),
        request.query_params.get("page", ""),
    )
    runs = list(listed.runs)
    return viewer.render(
        template,
        {
            "runs": runs,
            "job_names": await job_names(viewer, runs),
            "show_job": True,
            "search": search,
            "query": urlencode(search.query()),
            "states": RUN_STATES,
            "origins": ORIGINS,
            "next_page": listed.next_page_token,
        },
    )


@page(TEAM)
async def runs_list(request: Request, viewer: Viewer) -> Response:
    return await _runs_page(request, viewer, "runs.html", "")


@page(TEAM)
async def dead_letters(request: Request, viewer: Viewer) -> Response:
    return await _runs_page(request, viewer, "dead_letters.html", "DEAD_LETTERED")


async def _run(viewer: Viewer, job_id: str, run_id: str) -> run_pb2.Run:
    request = job_service_pb2.GetRunRequest(name=viewer.run_name(job_id, run_id))
    return (await viewer.call(viewer.api.jobs.GetRun, request)).run


async def _job_or_none(viewer: Viewer, job_id: str) -> job_pb2.Job | None:
    request = job_service_pb2.GetJobRequest(name=viewer.job_name(job_id))
    try:
        return (await viewer.call(viewer.api.jobs.GetJob, request)).job
    except ApiError as error:
        if error.code != "NOT_FOUND":
            raise
        return None


@page(TEAM)
async def run_detail(request: Request, viewer: Viewer) -> Response:
    job_id, run_id = request.path_params["job_id"], request.path_params["run_id"]
    run, job = await asyncio.gather(_run(viewer, job_id, run_id), _job_or_none(viewer, job_id))
    now = datetime.now(UTC)
    return viewer.render(
        "run.html",
        {
            "run": run,
            "job": job,
            "job_id": job_id,
            "events": timeline.events(run, now),
            "bars": timeline.bars(run, now),
            "request_id": str(uuid.uuid4()),
        },
    )


@page(TEAM)
async def run_redrive(request: Request, viewer: Viewer) -> Response:
    job_id, run_id = request.path_params["job_id"], request.path_params["run_id"]
    fields = await viewer.form()
    redrive = job_service_pb2.RedriveRunRequest(
        name=viewer.run_name(job_id, run_id),
        request_id=form_text(fields.get("request_id")) or str(uuid.uuid4()),
    )
    try:
        await viewer.call(viewer.api.jobs.RedriveRun, redrive)
    except ApiError as error:
        if error.code != "FAILED_PRECONDITION":
            raise
        return viewer.redirect(f"/runs/{job_id}/{run_id}", f"Not redriven: {error.details.message}")
    return viewer.redirect(f"/runs/{job_id}/{run_id}", "Redriven: the run is queued again.")


def _redrive_request(
    viewer: Viewer, search: RunSearch, *, validate_only: bool, request_id: str = ""
) -> job_service_pb2.BatchRedriveRunsRequest:
    return job_service_pb2.BatchRedriveRunsRequest(
        parent=_parent(viewer, search.job),
        filter=_filter(viewer, search, "DEAD_LETTERED"),
        validate_only=validate_only,
        request_id=request_id,
    )


@page(TEAM)
async def redrive_confirm(request: Request, viewer: Viewer) -> Response:
    """How many dead letters a redrive of the search would send back, before it does."""
    search = RunSearch.of(request.query_params)
    counted = await viewer.call(
        viewer.api.jobs.BatchRedriveRuns, _redrive_request(viewer, search, validate_only=True)
    )
    return viewer.render(
        "redrive.html",
        {
            "matched": counted.matched,
            "filter": _filter(viewer, search, "DEAD_LETTERED"),
            "query": urlencode(search.query()),
            "request_id": str(uuid.uuid4()),
            "back": "/dead-letters?" + urlencode(search.query()),
        },
    )


@page(TEAM)
async def redrive_all(request: Request, viewer: Viewer) -> Response:
    fields = await viewer.form()
    search = RunSearch.of({k: v for k, v in fields.items() if isinstance(v, str)})
    back = local_path(form_text(fields.get("back")) or "/dead-letters")
    batch = _redrive_request(
        viewer, search, validate_only=False, request_id=form_text(fields.get("request_id"))
    )
    try:
        done = await viewer.call(viewer.api.jobs.BatchRedriveRuns, batch, BATCH_TIMEOUT_SECONDS)
    except ApiError as error:
        if error.code not in ("FAILED_PRECONDITION", "INVALID_ARGUMENT"):
            raise
        return viewer.redirect(back, f"Nothing redriven: {error.details.message}")
    return viewer.redirect(back, batch_outcome(done, "Redrove", "Not redriven", "runs"))


@page(TEAM)
async def quota(request: Request, viewer: Viewer) -> Response:
    api = viewer.api.jobs
    found, held = await asyncio.gather(
        viewer.call(api.GetTeamQuota, job_service_pb2.GetTeamQuotaRequest()),
        list_runs(viewer, _parent(viewer, ""), HELD),
    )
    runs = list(held.runs)
    return viewer.render(
        "quota.html",
        {
            "quota": found.quota,
            "usage": found.usage,
            "runs": runs,
            "job_names": await job_names(viewer, runs),
            "show_job": True,
            "more_held": bool(held.next_page_token),
            "priority": job_pb2.Priority,
        },
    )


routes = [
    Route("/runs", runs_list, methods=["GET"]),
    Route("/runs/{job_id}/{run_id}", run_detail, methods=["GET"]),
    Route("/runs/{job_id}/{run_id}/redrive", run_redrive, methods=["POST"]),
    Route("/dead-letters", dead_letters, methods=["GET"]),
    Route("/dead-letters/redrive", redrive_confirm, methods=["GET"]),
    Route("/dead-letters/redrive", redrive_all, methods=["POST"]),
    Route("/quota", quota, methods=["GET"]),
]
