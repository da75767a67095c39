"""Teams, jobs, runs and tokens as people type them, turned into resource names.

A job is ``teams/{team}/jobs/{job_id}`` or just its id; for an id the team comes from
``--team`` / ``DUETIME_TEAM``, else from the token (the calling team, as GetTeamQuota names
it). A team is ``teams/{team}`` or its id; a token ``tokens/{token_id}`` or its id.
"""

from __future__ import annotations

from duetime.jobs.v1 import job_service_pb2
from duetime_cli.exits import ExitCode
from duetime_cli.failures import Failure
from duetime_cli.session import Session


def team_of(session: Session) -> str:
    if not session.team:
        found = session.call(session.jobs.GetTeamQuota, job_service_pb2.GetTeamQuotaRequest())
        session.team = found.name.removeprefix("teams/")
    return session.team


def job_name(session: Session, ref: str) -> str:
    if "/" in ref:
        return ref
    return f"teams/{team_of(session)}/jobs/{ref}"


def run_name(session: Session, ref: str, run_id: str | None) -> str:
    if run_id is not None:
        return f"{job_name(session, ref)}/runs/{run_id}"
    if "/runs/" not in ref:
        raise Failure.local(
            ExitCode.USAGE,
            "INVALID_ARGUMENT",
            "give a run as JOB RUN_ID or as teams/{team}/jobs/{job_id}/runs/{run_id}",
        )
    return ref


def team_name(ref: str) -> str:
    """``search`` or ``teams/search`` as ``teams/search``."""
    return ref if ref.startswith("teams/") else f"teams/{ref}"


def token_name(ref: str) -> str:
    """A token's id or ``tokens/{token_id}`` as ``tokens/{token_id}``."""
    return ref if ref.startswith("tokens/") else f"tokens/{ref}"
