"""Resource names (`teams/{team}[/jobs/{job}[/runs/{run}]]`) to ids, with field-named errors."""

from __future__ import annotations

import re
import uuid

from duetime_core.calendars import calendar_id_problem
from duetime_core.errors import InvalidArgument, NotFound
from duetime_core.teams import team_id_problem

_TEAM = re.compile(r"^teams/([^/]+)$")
_JOB = re.compile(r"^teams/([^/]+)/jobs/([^/]+)$")
_RUN = re.compile(r"^teams/([^/]+)/jobs/([^/]+)/runs/([^/]+)$")
_CALENDAR = re.compile(r"^teams/([^/]+)/calendars/([^/]+)$")


def _uuid(text: str, field: str, what: str) -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError:
        raise InvalidArgument.field(field, f"{what} id {text!r} is not a UUID") from None


def _team_matches(name_team: str, team_id: str) -> None:
    # Another team's job is NOT_FOUND, exactly like a missing one: never a hint that it exists.
    if name_team != team_id:
        raise NotFound("job not found", reason="JOB_NOT_FOUND")


def parse_team_name(name: str, field: str = "name") -> str:
    match = _TEAM.match(name)
    if match is None or team_id_problem(match[1]) is not None:
        raise InvalidArgument.field(field, "must be teams/{team_id}")
    return match[1]


def check_own_team(name: str, team_id: str, field: str) -> None:
    """An optional `teams/{team}` in a team's request (a parent): empty or the caller's own.
    Another team is NOT_FOUND, like another team's job."""
    if name and parse_team_name(name, field) != team_id:
        raise NotFound("team not found", reason="TEAM_NOT_FOUND")


def resolve_job(team_id: str, name: str, job_id: str, name_field: str = "name") -> uuid.UUID:
    """The job a request names: by its name, or by ``job_id`` alone in the caller's team (as
    the HTTP short forms such as `/v1/jobs/{job_id}` bind it); exactly one of the two."""
    if name and job_id:
        raise InvalidArgument.field("job_id", f"set either {name_field} or job_id, not both")
    if job_id:
        return _uuid(job_id, "job_id", "job")
    return parse_job_name(name, team_id, field=name_field)


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


def resolve_parent(team_id: str, parent: str, job_id: str) -> uuid.UUID | None:
    """The job whose runs a request lists (None: every job of the team): ``parent`` (a job or
    ``teams/{team}/jobs/-``), or ``job_id`` alone in the caller's team; exactly one."""
    if parent and job_id:
        raise InvalidArgument.field("job_id", "set either parent or job_id, not both")
    if job_id:
        return _uuid(job_id, "job_id", "job")
    return parse_job_parent(parent, team_id)


def parse_calendar_name(name: str, team_id: str, field: str = "name") -> str:
    """The calendar id of `teams/{team}/calendars/{calendar_id}`; another team's is NOT_FOUND."""
    match = _CALENDAR.match(name)
    if match is None:
        raise InvalidArgument.field(field, "expected teams/{team}/calendars/{calendar_id}")
    problem = calendar_id_problem(match[2])
    if problem is not None:
        raise InvalidArgument.field(field, f"calendar id: {problem}")
    if match[1] != team_id:
        raise NotFound("calendar not found", reason="CALENDAR_NOT_FOUND")
    return match[2]
