"""Acting on many jobs or runs in one call (BatchPauseJobs, BatchResumeJobs, BatchRedriveRuns):
how many it would change first (``validate_only``), a person's yes on a terminal (``--yes``
otherwise, and always for a script), then each item's outcome, with the exit code of the
first that failed."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

import typer

from duetime.jobs.v1 import job_service_pb2 as svc
from duetime_cli.commands import usage_error
from duetime_cli.failures import Failure
from duetime_cli.output import Format, emit, stderr
from duetime_cli.session import BATCH_TIMEOUT_SECONDS, Session
from duetime_cli.tables import batch_table
from duetime_client.status import ErrorDetails

YesOption = Annotated[
    bool,
    typer.Option("--yes", "-y", help="Go on without asking (needed when stdin is not a terminal)."),
]

BatchRequest = svc.BatchPauseJobsRequest | svc.BatchResumeJobsRequest | svc.BatchRedriveRunsRequest
BatchResponse = (
    svc.BatchPauseJobsResponse | svc.BatchResumeJobsResponse | svc.BatchRedriveRunsResponse
)


@dataclass(frozen=True)
class Batch:
    """One batch call: what it acts on, for people (``paused``, ``job``, ``ACTIVE, matching:
    labels.env = "dev"``), and a note told once it is counted (a request id)."""

    rpc: Callable[..., BatchResponse]
    request: BatchRequest
    verb: str
    done: str
    noun: str
    scope: str
    note: str = ""


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def confirmed(verb: str, yes: bool) -> bool:
    """A person's yes to ``verb`` what was counted: asked on a terminal, ``--yes`` otherwise."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise usage_error(f"stdin is not a terminal to ask on: give --yes to {verb} them")
    return typer.confirm(f"{verb.capitalize()} them?", default=False, err=True)


def run_batch(session: Session, batch: Batch, yes: bool, output: Format) -> None:
    """Counts, asks, acts, and shows each item's outcome; exits with the first failure's
    code (docs/cli.md) when one failed."""
    counting = type(batch.request)()
    counting.CopyFrom(batch.request)  # type: ignore[arg-type]  # the same type
    counting.validate_only = True
    counted = session.call(batch.rpc, counting, timeout=BATCH_TIMEOUT_SECONDS)
    stderr.print(
        f"{_count(counted.matched, batch.noun)} to {batch.verb} ({batch.scope})", soft_wrap=True
    )
    if not counted.matched:
        emit(counted, output, lambda: [f"Nothing to {batch.verb}."])
        return
    if batch.note:
        stderr.print(batch.note, soft_wrap=True)
    if not confirmed(batch.verb, yes):
        stderr.print("Nothing changed.")
        return
    done = session.call(batch.rpc, batch.request, timeout=BATCH_TIMEOUT_SECONDS)
    failed = [result.status for result in done.results if result.status.code]
    changed = len(done.results) - len(failed)
    summary = f"{batch.done.capitalize()} {changed} of {_count(done.matched, batch.noun)}."
    emit(done, output, lambda: [batch_table(done.results), "", summary])
    if failed:
        raise typer.Exit(Failure.from_details(ErrorDetails.from_status(failed[0])).exit_code)
