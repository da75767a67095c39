"""Resource names (`teams/{team}/jobs/{job}[/runs/{run}]`) to ids, with field-named errors."""

from __future__ import annotations

import re
import uuid

from duetime_core.errors import InvalidArgument, NotFound

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
