"""The operator's pages (an operator token only): teams with their quota and usage, one team
with its limits (its own or the platform's default) and tokens, tokens across teams, and the
fleet's health."""

from __future__ import annotations

import uuid

from google.protobuf import field_mask_pb2
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from duetime.admin.v1 import admin_service_pb2 as admin_pb2
from duetime.jobs.v1 import job_pb2, quota_pb2
from duetime_console import fleet
from duetime_console.api import ApiError
from duetime_console.session import OPERATOR
from duetime_console.web import Refused, Viewer, form_text, page

LIMITS: tuple[str, ...] = tuple(f.name for f in quota_pb2.TeamQuota.DESCRIPTOR.fields)
PRIORITIES = ("LOW", "NORMAL", "HIGH")
ROLES = ("TEAM", "OPERATOR", "WORKER")
# A limit's field in the quota form left as this goes back to the platform's default.
DEFAULT = ""


def limit_text(quota: object, name: str) -> str:
    """A limit as people read it: ``none`` for 0, a priority by its name."""
    value = getattr(quota, name)
    if name == "max_priority":
        return job_pb2.Priority.Name(value).removeprefix("PRIORITY_") if value else "-"
    return "none" if value == 0 else str(value)


def _team_id(text: str) -> str:
    if not text or len(text) > 63 or not text.replace("-", "").isalnum():
        raise Refused(404, "Not found", "There is no such team.")
    return text


@page(OPERATOR)
async def teams(request: Request, viewer: Viewer) -> Response:
    listed = await viewer.call(
        viewer.api.admin.ListTeams,
        admin_pb2.ListTeamsRequest(page_size=100, page_token=request.query_params.get("page", "")),
    )
    return viewer.render(
        "operator_teams.html",
        {
            "teams": list(listed.teams),
            "next_page": listed.next_page_token,
            "limit_text": limit_text,
            "limits": LIMITS,
            "problem": "",
        },
    )


@page(OPERATOR)
async def team_create(request: Request, viewer: Viewer) -> Response:
    fields = await viewer.form()
    team = admin_pb2.Team(
        team_id=form_text(fields.get("team_id")), display_name=form_text(fields.get("display_name"))
    )
    try:
        await viewer.call(viewer.api.admin.CreateTeam, admin_pb2.CreateTeamRequest(team=team))
    except ApiError as error:
        if error.code not in ("INVALID_ARGUMENT", "ALREADY_EXISTS"):
            raise
        details = error.details
        why = "; ".join(f"{v.field}: {v.description}" for v in details.violations)
        return viewer.redirect("/operator/teams", f"Not created: {why or details.message}")
    return viewer.redirect(f"/operator/teams/{team.team_id}", f"Created team {team.team_id}.")


async def _tokens(viewer: Viewer, team_id: str, include_revoked: bool) -> list[admin_pb2.Token]:
    request = admin_pb2.ListTokensRequest(
        team_id=team_id, include_revoked=include_revoked, page_size=200
    )
    return list((await viewer.call(viewer.api.admin.ListTokens, request)).tokens)


@page(OPERATOR)
async def team_detail(request: Request, viewer: Viewer) -> Response:
    team_id = _team_id(request.path_params["team_id"])
    found = await viewer.call(
        viewer.api.admin.GetTeam, admin_pb2.GetTeamRequest(name=f"teams/{team_id}")
    )
    return viewer.render(
        "operator_team.html",
        {
            "team": found.team,
            "tokens": await _tokens(viewer, team_id, False),
            "limits": LIMITS,
            "limit_text": limit_text,
            "priorities": PRIORITIES,
            "secret": "",
            "problems": [],
        },
    )


def _overrides(fields: dict[str, str]) -> tuple[admin_pb2.QuotaOverrides, list[str], list[str]]:
    """The quota form's values: the overrides, the mask (every limit: an empty one goes back to
    the default), and what is wrong."""
    overrides, problems = admin_pb2.QuotaOverrides(), []
    for name in LIMITS:
        text = fields.get(name, "").strip()
        if text == DEFAULT:
            continue
        if name == "max_priority":
            if text not in PRIORITIES:
                problems.append(f"{name}: one of {', '.join(PRIORITIES)}")
                continue
            overrides.max_priority = job_pb2.Priority.Value("PRIORITY_" + text)
        elif not text.isdigit():
            problems.append(f"{name}: a whole number (0: no limit), or empty for the default")
        else:
            setattr(overrides, name, int(text))
    return overrides, list(LIMITS), problems


@page(OPERATOR)
async def team_quota(request: Request, viewer: Viewer) -> Response:
    team_id = _team_id(request.path_params["team_id"])
    form = await viewer.form()
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    overrides, paths, problems = _overrides(fields)
    back = f"/operator/teams/{team_id}"
    if problems:
        return viewer.redirect(back, "Not saved: " + "; ".join(problems))
    update = admin_pb2.UpdateTeamQuotaRequest(
        name=f"teams/{team_id}", quota=overrides, update_mask=field_mask_pb2.FieldMask(paths=paths)
    )
    try:
        await viewer.call(viewer.api.admin.UpdateTeamQuota, update)
    except ApiError as error:
        if error.code != "INVALID_ARGUMENT":
            raise
        details = error.details
        why = "; ".join(f"{v.field}: {v.description}" for v in details.violations)
        return viewer.redirect(back, f"Not saved: {why or details.message}")
    return viewer.redirect(back, "Quota saved: it applies within seconds everywhere.")


@page(OPERATOR)
async def tokens(request: Request, viewer: Viewer) -> Response:
    revoked = request.query_params.get("revoked") == "1"
    return viewer.render(
        "operator_tokens.html",
        {
            "tokens": await _tokens(viewer, "", revoked),
            "revoked": revoked,
            "roles": ROLES,
            "secret": "",
            "team_id": "",
        },
    )


@page(OPERATOR)
async def token_create(request: Request, viewer: Viewer) -> Response:
    """A new token; its secret is shown on this page once, never again (nor logged)."""
    fields = await viewer.form()
    role, team_id = form_text(fields.get("role")), form_text(fields.get("team_id"))
    if role not in ROLES:
        raise Refused(400, "Not created", f"role: one of {', '.join(ROLES)}")
    token = admin_pb2.Token(
        role=admin_pb2.TokenRole.Value("TOKEN_ROLE_" + role),
        team_id=team_id if role == "TEAM" else "",
        description=form_text(fields.get("description")),
        worker_id_prefix=form_text(fields.get("worker_id_prefix")) if role == "WORKER" else "",
    )
    try:
        created = await viewer.call(
            viewer.api.admin.CreateToken, admin_pb2.CreateTokenRequest(token=token)
        )
    except ApiError as error:
        if error.code not in ("INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION"):
            raise
        details = error.details
        why = "; ".join(f"{v.field}: {v.description}" for v in details.violations)
        return viewer.redirect("/operator/tokens", f"Not created: {why or details.message}")
    return viewer.render("token_created.html", {"token": created.token, "secret": created.secret})


@page(OPERATOR)
async def token_revoke(request: Request, viewer: Viewer) -> Response:
    token_id = request.path_params["token_id"]
    try:
        uuid.UUID(token_id)
    except ValueError:
        raise Refused(404, "Not found", "There is no such token.") from None
    revoke = admin_pb2.RevokeTokenRequest(name=f"tokens/{token_id}")
    await viewer.call(viewer.api.admin.RevokeToken, revoke)
    return viewer.redirect(
        "/operator/tokens", f"Revoked token {token_id}: refused everywhere within seconds."
    )


@page(OPERATOR)
async def fleet_health(request: Request, viewer: Viewer) -> Response:
    targets = request.app.state.metrics_targets
    return viewer.render("fleet.html", {"fleet": await fleet.read(targets)})


routes = [
    Route("/operator", teams, methods=["GET"]),
    Route("/operator/teams", teams, methods=["GET"]),
    Route("/operator/teams", team_create, methods=["POST"]),
    Route("/operator/teams/{team_id}", team_detail, methods=["GET"]),
    Route("/operator/teams/{team_id}/quota", team_quota, methods=["POST"]),
    Route("/operator/tokens", tokens, methods=["GET"]),
    Route("/operator/tokens", token_create, methods=["POST"]),
    Route("/operator/tokens/{token_id}/revoke", token_revoke, methods=["POST"]),
    Route("/operator/fleet", fleet_health, methods=["GET"]),
]
