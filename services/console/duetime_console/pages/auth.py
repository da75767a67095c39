"""Signing in with a team or operator token, signing out, and the viewer's time zone.

The token is sent once, in the sign-in form's POST body, and kept only sealed in the session
cookie (``duetime_console.session``). Which kind it is, the API says: JobService answers a team
token (GetTeamQuota names its team), AdminService an operator's.
"""

from __future__ import annotations

from dataclasses import replace

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from duetime.admin.v1 import admin_service_pb2
from duetime.jobs.v1 import job_service_pb2
from duetime_console.api import ApiError
from duetime_console.session import OPERATOR, TEAM, Session
from duetime_console.times import known_zone, zone_names
from duetime_console.web import Viewer, api_refusal, form_text, home_of, local_path, page


@page(None)
async def signin_form(request: Request, viewer: Viewer) -> Response:
    if viewer.session.signed_in:
        return RedirectResponse(home_of(viewer.session), 303)
    return viewer.render(
        "signin.html",
        {
            "next": local_path(request.query_params.get("next", "/")),
            "error": "",
            "zones": zone_names(),
        },
    )


async def _role_of(viewer: Viewer, token: str) -> tuple[str, str]:
    """``(role, team)`` of ``token``, as the API sees it."""
    api = viewer.api
    try:
        quota = await api.call(api.jobs.GetTeamQuota, job_service_pb2.GetTeamQuotaRequest(), token)
        return TEAM, quota.name.removeprefix("teams/")
    except ApiError as error:
        if error.code != "PERMISSION_DENIED":
            raise
    request = admin_service_pb2.GetQuotaDefaultsRequest()
    await api.call(api.admin.GetQuotaDefaults, request, token)
    return OPERATOR, ""


@page(None)
async def signin(request: Request, viewer: Viewer) -> Response:
    form = await viewer.form()
    token, zone = form_text(form.get("token")), form_text(form.get("zone")) or "UTC"
    target = local_path(form_text(form.get("next")) or "/")
    zone = zone if known_zone(zone) else "UTC"
    error = ""
    if not token:
        error = "Paste your token."
    else:
        try:
            role, team = await _role_of(viewer, token)
        except ApiError as failed:
            if failed.code == "UNAUTHENTICATED":
                error = "This token is not valid: mistyped, or revoked."
            elif failed.code == "PERMISSION_DENIED":
                error = "This is neither a team token nor an operator token."
            else:
                raise api_refusal(failed) from None
        else:
            viewer.session = viewer.session.signed_in_as(token, role, team, zone)
            return RedirectResponse(home_of(viewer.session) if target == "/" else target, 303)
    return viewer.render(
        "signin.html", {"next": target, "error": error, "zones": zone_names()}, status=401
    )


@page(None)
async def signout(request: Request, viewer: Viewer) -> Response:
    viewer.session = Session(flash="Signed out.")
    return RedirectResponse("/signin", 303)


@page(None)
async def zone_form(request: Request, viewer: Viewer) -> Response:
    target = local_path(request.query_params.get("next", "/"))
    return viewer.render("zone.html", {"next": target, "zones": zone_names()})


@page(None)
async def set_zone(request: Request, viewer: Viewer) -> Response:
    """The zone the viewer reads times in (the page header's picker)."""
    form = await viewer.form()
    zone = form_text(form.get("zone"))
    if known_zone(zone):
        viewer.session = replace(viewer.session, zone=zone)
    return RedirectResponse(local_path(form_text(form.get("next")) or "/"), 303)


@page(None)
async def home(request: Request, viewer: Viewer) -> Response:
    if not viewer.session.signed_in:
        return RedirectResponse("/signin", 303)
    return RedirectResponse(home_of(viewer.session), 303)


routes = [
    Route("/", home, methods=["GET"]),
    Route("/signin", signin_form, methods=["GET"]),
    Route("/signin", signin, methods=["POST"]),
    Route("/signout", signout, methods=["POST"]),
    Route("/zone", zone_form, methods=["GET"]),
    Route("/zone", set_zone, methods=["POST"]),
]
