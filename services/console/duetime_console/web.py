"""What every page shares: who is looking (``Viewer``), the guard each route goes through
(signed in, the right role, the CSRF token on every POST), and rendering a page or, for an
htmx refresh, only its table.

Routes are declared with ``page(role)``: a POST without the session's CSRF token (the form's
``csrf`` field or the ``X-CSRF-Token`` header) is refused with 403 before its handler runs,
whatever the route. Nothing a handler can forget.
"""

from __future__ import annotations

import hmac
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from google.protobuf.message import Message
from jinja2 import (
    Environment,
    FileSystemLoader,
    StrictUndefined,
    pass_context,
    select_autoescape,
)
from jinja2.runtime import Context
from markupsafe import Markup
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from duetime.admin.v1 import admin_service_pb2
from duetime.jobs.v1 import job_service_pb2
from duetime_client import describe
from duetime_client.status import Violation
from duetime_console import session as sessions
from duetime_console import text, times
from duetime_console.api import CALL_TIMEOUT_SECONDS, Api, ApiError
from duetime_console.session import Session
from duetime_core.jobspec import PARTITIONS

Handler = Callable[[Request, "Viewer"], Awaitable[Response]]
BatchAnswer = (
    job_service_pb2.BatchPauseJobsResponse
    | job_service_pb2.BatchResumeJobsResponse
    | job_service_pb2.BatchRedriveRunsResponse
)
Reply = TypeVar("Reply", bound=Message)

TEMPLATES = Path(__file__).parent / "templates"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
_SAFE_METHODS = frozenset({"GET", "HEAD"})

environment = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=select_autoescape(default=True),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


@pass_context
def _when(context: Context, message: Message, name: str) -> Markup:
    """A Timestamp field in the viewer's zone, UTC beside it."""
    return times.field_at(message, name, context["zone"])


@pass_context
def _at(context: Context, moment: datetime | None) -> Markup:
    return times.at(moment, context["zone"])


environment.globals.update(
    when=_when,
    at=_at,
    describe=describe,
    words=text.schedule_words,
    tone=text.tone,
    job_state=text.job_state,
    run_state=text.run_state,
    run_origin=text.run_origin,
    outcome=text.outcome,
    reason=text.reason,
    dst_notes=text.DST_NOTES,
    getattr_=getattr,
    roles_enum=admin_service_pb2.TokenRole,
    partitions=PARTITIONS,
)


class Refused(Exception):
    """A request answered with an error page: ``status`` and what to tell the viewer."""

    def __init__(self, status: int, title: str, message: str) -> None:
        super().__init__(message)
        self.status, self.title, self.message = status, title, message


@dataclass
class Viewer:
    """The signed-in team or operator behind a request, and the calls made as them."""

    request: Request
    api: Api

    @property
    def session(self) -> Session:
        found: Session = self.request.state.session
        return found

    @session.setter
    def session(self, value: Session) -> None:
        self.request.state.session = value

    @property
    def zone(self) -> str:
        return self.session.zone

    async def call(
        self,
        rpc: Callable[..., Awaitable[Reply]],
        request: Message,
        deadline_seconds: float = CALL_TIMEOUT_SECONDS,
    ) -> Reply:
        return await self.api.call(rpc, request, self.session.token, deadline_seconds)

    def job_name(self, job_id: str) -> str:
        """The team's job ``job_id``: never another team's, whatever the URL says."""
        return f"teams/{self.session.team}/jobs/{uuid_or_404(job_id, 'job')}"

    def run_name(self, job_id: str, run_id: str) -> str:
        return f"{self.job_name(job_id)}/runs/{uuid_or_404(run_id, 'run')}"

    async def form(self) -> FormData:
        return await self.request.form()

    def flash(self, message: str) -> None:
        """Shows ``message`` on the next page."""
        self.session = self.session.with_flash(message)

    def redirect(self, path: str, message: str = "") -> RedirectResponse:
        """After a POST: to ``path`` (303, so the browser GETs it), with ``message`` shown."""
        if message:
            self.flash(message)
        return RedirectResponse(path, status_code=303)

    def render(
        self, template: str, context: Mapping[str, Any] | None = None, status: int = 200
    ) -> HTMLResponse:
        return render(self.request, template, context or {}, status)


def render(
    request: Request, template: str, context: Mapping[str, Any], status: int = 200
) -> HTMLResponse:
    """The page; for htmx's refresh of a table (``HX-Request``, not a history restore) only
    the template's ``table`` block."""
    session: Session = request.state.session
    shown = {
        "request": request,
        "session": session,
        "zone": session.zone,
        "csrf": session.csrf,
        "flash": session.flash,
        "path": request.url.path,
        **context,
    }
    page = environment.get_template(template)
    fragment = (
        request.headers.get("hx-request") == "true"
        and "hx-history-restore-request" not in request.headers
        and "table" in page.blocks
    )
    if fragment:
        body = "".join(page.blocks["table"](page.new_context(shown)))
    else:
        body = page.render(shown)
        if session.flash:
            # Shown once: the page that showed it clears it.
            request.state.session = replace(session, flash="")
    response = HTMLResponse(body, status_code=status)
    response.headers["Vary"] = "HX-Request"
    return response


def page(role: str | None) -> Callable[[Handler], Callable[[Request], Awaitable[Response]]]:
    """A route's guard: ``role`` (``team``, ``operator``) must be signed in (None: anyone),
    and a POST must carry the session's CSRF token."""

    def wrap(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            session: Session = request.state.session
            if request.method not in _SAFE_METHODS:
                await check_csrf(request, session)
            if role is not None and not session.signed_in:
                target = request.url.path
                if request.url.query:
                    target += "?" + request.url.query
                return RedirectResponse(f"/signin?next={quote(target, safe='')}", 303)
            if role is not None and session.role != role:
                raise Refused(
                    403,
                    "Not for this token",
                    "These pages need an operator token."
                    if role == sessions.OPERATOR
                    else "These pages need a team token; an operator token opens the "
                    "operator's pages.",
                )
            return await handler(request, Viewer(request, request.app.state.api))

        endpoint.__name__ = handler.__name__
        endpoint.__doc__ = handler.__doc__
        return endpoint

    return wrap


async def check_csrf(request: Request, session: Session) -> None:
    """Refuses (403) an unsafe request without the session's CSRF token."""
    sent = request.headers.get(CSRF_HEADER, "")
    if not sent and request.headers.get("content-type", "").startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    ):
        value = (await request.form()).get(CSRF_FIELD, "")
        sent = value if isinstance(value, str) else ""
    if not sent or not hmac.compare_digest(sent.encode(), session.csrf.encode()):
        raise Refused(
            403,
            "Form refused",
            "This form was not sent from a page of this session (its CSRF token is missing "
            "or stale). Go back, reload the page and send it again.",
        )


def batch_outcome(done: BatchAnswer, done_verb: str, not_done: str, what: str) -> str:
    """What a batch did, for its flash message: how many of those it matched were changed, and
    why the first few were not."""
    failed = [r for r in done.results if r.status.code != 0]
    message = f"{done_verb} {len(done.results) - len(failed)} of {done.matched} {what}."
    if failed:
        message += f" {not_done}: " + "; ".join(
            f"{r.name.rsplit('/', 1)[-1]}: {r.status.message}" for r in failed[:5]
        )
    return message


def problems_of(error: ApiError) -> list[Violation]:
    """A refused form's problems for the page: each bad field the API names, else each quota
    it hit, else its code and message."""
    details = error.details
    if details.violations:
        return details.violations
    quotas = [Violation(f"quota {q.quota}", q.description or q.human()) for q in details.quotas]
    return quotas or [Violation(details.head, details.message)]


def form_text(value: object) -> str:
    """A form field's text, trimmed ("" for a missing field or a file)."""
    return value.strip() if isinstance(value, str) else ""


def uuid_or_404(text: str, what: str) -> str:
    """Ids are UUIDs as the API makes them; anything else is not found, without a call."""
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise Refused(404, "Not found", f"There is no such {what}.") from None


def api_refusal(error: ApiError) -> Refused:
    """How a failed call reads as a page."""
    details = error.details
    match error.code:
        case "NOT_FOUND":
            return Refused(404, "Not found", details.message or "There is no such thing.")
        case "PERMISSION_DENIED":
            return Refused(403, "Not allowed", details.message)
        case "UNAVAILABLE" | "DEADLINE_EXCEEDED":
            return Refused(
                503, "The API does not answer", f"{details.head}: {details.message}. Try again."
            )
    return Refused(502, "The API refused", f"{details.head}: {details.message}")


def local_path(target: str) -> str:
    """``target`` when it is a path of this site, else ``/`` (no open redirect)."""
    if target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/"


def home_of(session: Session) -> str:
    return "/operator/teams" if session.operator else "/jobs"
