"""Resource names (`teams/{team}/jobs/{job}[/runs/{run}]`) to ids, with field-named errors."""

from __future__ import annotations

import re
import uuid

from duetime_core.errors import InvalidArgument, NotFound
from duetime_infra.grpc.auth import current_team

_TEAM = re.compile(r"^teams/([^/]+)$")
_JOB = re.compile(r"^teams/([^/]+)/jobs/([^/]+)$")
_RUN = re.compile(r"^teams/([^/]+)/jobs/([^/]+)/runs/([^/]+)$")


def _uuid(text: str, field: str, what: str) -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError:
        raise InvalidArgument.field(field, f"{what} id {text!r} is not a UUID") from None


def _team_matches(name_team: str, team_id: str) -> None:
    # Another team's job is NOT_FOUND, exactly like a missing one: never a hint that it exists.
    if name_team != team_id:
        raise NotFound("job not found", reason="JOB_NOT_FOUND")


def parse_job_name(name: str, team_id: str, field: str = "name") -> uuid.UUID:
    match = _JOB.match(name)
    if match is None:
        raise InvalidArgument.field(field, "expected teams/{team}/jobs/{job_id}")
    job_id = _uuid(match[2], field, "job")
    _team_matches(match[1], team_id)
    return job_id


def parse_run_name(name: str, team_id: str, field: str = "name") -> tuple[uuid.UUID, uuid.UUID]:
    match = _RUN.match(name)
    if match is None:
        raise InvalidArgument.field(field, "expected teams/{team}/jobs/{job_id}/runs/{run_id}")
    job_id = _uuid(match[2], field, "job")
    run_id = _uuid(match[3], field, "run")
    _team_matches(match[1], team_id)
    return job_id, run_id


def parse_job_parent(name: str, team_id: str, field: str = "parent") -> uuid.UUID | None:
    """A job, or every job of the team (``teams/{team}/jobs/-``: None)."""
    match = _JOB.match(name)
    if match is not None and match[2] == "-":
        _team_matches(match[1], team_id)
        return None
    return parse_job_name(name, team_id, field)


def team_of_parent(parent: str, field: str = "parent") -> str:
    """The calling team, which ``parent`` (``teams/{team}``, or empty) must name."""
    team_id = current_team()
    if not parent:
        return team_id
    match = _TEAM.match(parent)
    if match is None:
        raise InvalidArgument.field(field, "expected teams/{team}")
    _team_matches(match[1], team_id)
    return team_id
