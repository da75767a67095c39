"""Job and run references as people type them, turned into resource names.

A job is ``teams/{team}/jobs/{job_id}`` or just its id; for an id the team comes from
``--team`` / ``DUETIME_TEAM``, else from the token (the team of any job it can list).
"""

from __future__ import annotations

from duetime.jobs.v1 import job_service_pb2
from duetime_cli.failures import ExitCode, Failure
from duetime_cli.session import Session


def team_of(session: Session) -> str:
    if not session.team:
        page = session.call(session.jobs.ListJobs, job_service_pb2.ListJobsRequest(page_size=1))
        if not page.jobs:
            raise Failure.local(
                ExitCode.NOT_FOUND,
                "NOT_FOUND",
                "the token's team has no jobs; give the full name teams/{team}/jobs/{job_id} "
                "or --team",
            )
        session.team = page.jobs[0].team
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
