"""The console as an ASGI application: its pages, its static files (htmx, the stylesheet),
the middleware around every request, and how errors read."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from duetime_console.api import Api, ApiError
from duetime_console.config import MetricsTarget
from duetime_console.middleware import HeadersAndLogMiddleware, SessionMiddleware
from duetime_console.pages import auth, backfill, calendars, history, jobs, operator, runs
from duetime_console.session import Session, SessionSealer
from duetime_console.web import Refused, api_refusal, render

STATIC = Path(__file__).parent / "static"


def _refused(request: Request, refused: Refused) -> Response:
    if not hasattr(request.state, "session"):  # a path served without one (static files)
        return PlainTextResponse(f"{refused.title}: {refused.message}\n", refused.status)
    return render(
        request,
        "error.html",
        {"title": refused.title, "message": refused.message, "status": refused.status},
        refused.status,
    )


async def on_refused(request: Request, error: Exception) -> Response:
    assert isinstance(error, Refused)
    return _refused(request, error)


async def on_api_error(request: Request, error: Exception) -> Response:
    """A call refused where the page did not expect it. A token the API no longer takes (it
    was revoked) ends the session."""
    assert isinstance(error, ApiError)
    if error.code == "UNAUTHENTICATED":
        request.state.session = Session(flash="Your token is no longer accepted: sign in again.")
        return RedirectResponse("/signin", 303)
    return _refused(request, api_refusal(error))


async def on_http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    if error.status_code == 404:
        return _refused(request, Refused(404, "Not found", "There is no such page."))
    return _refused(request, Refused(error.status_code, "Refused", str(error.detail)))


async def healthz(request: Request) -> Response:
    """The probes' page: 200 while the console serves (it does not call the API)."""
    return PlainTextResponse("ok\n")


def routes() -> list[BaseRoute]:
    return [
        Route("/healthz", healthz, methods=["GET"]),
        *auth.routes,
        *history.routes,
        *backfill.routes,
        *calendars.routes,
        *jobs.routes,
        *runs.routes,
        *operator.routes,
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]


def build_app(
    api: Api, sealer: SessionSealer, metrics_targets: Sequence[MetricsTarget] = ()
) -> Starlette:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await api.close()

    app = Starlette(
        routes=routes(),
        middleware=[
            Middleware(HeadersAndLogMiddleware),
            Middleware(SessionMiddleware, sealer=sealer),
        ],
        exception_handlers={
            Refused: on_refused,
            ApiError: on_api_error,
            HTTPException: on_http_error,
        },
        lifespan=lifespan,
    )
    app.state.api = api
    app.state.metrics_targets = tuple(metrics_targets)
    return app
