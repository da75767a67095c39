"""``duetime backfill JOB --from T --to T``: run a job's past occurrences in a range
(BackfillJob), counted first (``validate_only``), then, once confirmed, made as runs of origin
BACKFILL paced by the team's quota."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from duetime.jobs.v1 import job_service_pb2 as svc
from duetime_cli.batch import YesOption, confirmed
from duetime_cli.commands import JobArg, command, enum_option, enum_value, moment_value
from duetime_cli.names import job_name
from duetime_cli.output import Format, OutputOption, emit, stderr
from duetime_cli.session import BATCH_TIMEOUT_SECONDS
from duetime_client.describe import backfill_count

_MOMENT = "An RFC 3339 instant (2026-11-01T05:30:00Z) or a duration ago (90m, 2d)"


def backfill(
    ctx: typer.Context,
    job: JobArg,
    start: Annotated[
        str, typer.Option("--from", metavar="TIME", help=f"{_MOMENT}: occurrences at or after it.")
    ],
    end: Annotated[
        str, typer.Option("--to", metavar="TIME", help=f"{_MOMENT}, not in the future: before it.")
    ],
    overlap: Annotated[
        str | None,
        enum_option(
            svc.BackfillOverlap,
            "BACKFILL_OVERLAP_",
            "How the runs run (default ALL)",
            metavar="OVERLAP",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count the occurrences and make no run.")
    ] = False,
    yes: YesOption = False,
    request_id: Annotated[
        str, typer.Option(help="Makes the backfill idempotent; defaults to a fresh UUID.")
    ] = "",
    output: OutputOption = Format.TABLE,
) -> None:
    """Run JOB's occurrences between --from and --to as its schedule gives them (zone and DST
    policies included): the count first, then the runs, paced by the team's quota."""
    with command(ctx, output) as session:
        now = datetime.now(UTC)
        request = svc.BackfillJobRequest(
            name=job_name(session, job),
            start_time=moment_value(start, "--from", now),
            end_time=moment_value(end, "--to", now),
            overlap=enum_value(svc.BackfillOverlap, "BACKFILL_OVERLAP_", overlap, "--overlap"),
            validate_only=True,
        )
        counted = session.call(session.jobs.BackfillJob, request, timeout=BATCH_TIMEOUT_SECONDS)
        stderr.print(f"To backfill: {backfill_count(counted)}.", soft_wrap=True)
        if dry_run or not counted.run_count:
            emit(counted, output, lambda: [_nothing(counted)])
            return
        if not confirmed("backfill", yes):
            stderr.print("Nothing changed.")
            return
        request.validate_only = False
        request.request_id = request_id or str(uuid.uuid4())
        done = session.call(session.jobs.BackfillJob, request, timeout=BATCH_TIMEOUT_SECONDS)
        emit(done, output, lambda: [_made(done, request.request_id)])


def _nothing(counted: svc.BackfillJobResponse) -> Any:
    if not counted.run_count:
        return "Nothing to backfill."
    return "Nothing changed (--dry-run)."


def _made(done: svc.BackfillJobResponse, request_id: str) -> Any:
    return (
        f"Made {done.run_count} runs (origin BACKFILL, request id {request_id}); the team's "
        "quota paces them. List them with: duetime runs list JOB --filter 'origin = BACKFILL'"
    )
