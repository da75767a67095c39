"""``duetime runs ...``: a job's runs, one run with its attempts, and redriving dead letters."""

from __future__ import annotations

import uuid
from typing import Annotated

import typer

from duetime.jobs.v1 import job_service_pb2, run_pb2
from duetime_cli.commands import (
    JobArg,
    LimitOption,
    collect,
    command,
    enum_option,
    enum_value,
)
from duetime_cli.names import job_name, run_name
from duetime_cli.output import Format, OutputOption, emit
from duetime_cli.tables import attempts_table, run_detail, runs_table

app = typer.Typer(help="Inspect runs and redrive dead-lettered ones.", no_args_is_help=True)

RunArg = Annotated[
    str,
    typer.Argument(
        metavar="RUN",
        help="The run's job (id or name) followed by RUN_ID, or the run's full name "
        "teams/{team}/jobs/{job_id}/runs/{run_id}.",
    ),
]
RunIdArg = Annotated[
    str | None, typer.Argument(metavar="RUN_ID", help="The run's id, after its job.")
]

StateOption = Annotated[
    str | None, enum_option(run_pb2.RunState, "RUN_STATE_", "Only runs in this state")
]


@app.command("list")
def list_runs(
    ctx: typer.Context,
    job: JobArg,
    state: StateOption = None,
    limit: LimitOption = 20,
    output: OutputOption = Format.TABLE,
) -> None:
    """List a job's runs, latest first."""
    with command(ctx, output) as session:
        parent = job_name(session, job)
        wanted = enum_value(run_pb2.RunState, "RUN_STATE_", state, "--state")

        def page(token: str, size: int) -> tuple[list[run_pb2.Run], str]:
            request = job_service_pb2.ListRunsRequest(
                parent=parent, page_size=size, page_token=token, state=wanted
            )
            response = session.call(session.jobs.ListRuns, request)
            return list(response.runs), response.next_page_token

        runs, token = collect(page, limit)
        response = job_service_pb2.ListRunsResponse(runs=runs, next_page_token=token)
        emit(response, output, lambda: [runs_table(runs)])


@app.command()
def get(
    ctx: typer.Context, run: RunArg, run_id: RunIdArg = None, output: OutputOption = Format.TABLE
) -> None:
    """Show one run and its attempts."""
    with command(ctx, output) as session:
        request = job_service_pb2.GetRunRequest(name=run_name(session, run, run_id))
        found = session.call(session.jobs.GetRun, request).run
        response = job_service_pb2.GetRunResponse(run=found)
        emit(response, output, lambda: [run_detail(found), attempts_table(found)])


@app.command()
def redrive(
    ctx: typer.Context,
    run: RunArg,
    run_id: RunIdArg = None,
    request_id: Annotated[
        str, typer.Option(help="Makes the redrive idempotent; defaults to a fresh UUID.")
    ] = "",
    output: OutputOption = Format.TABLE,
) -> None:
    """Send a DEAD_LETTERED run back to the queue with a fresh attempt budget."""
    with command(ctx, output) as session:
        request = job_service_pb2.RedriveRunRequest(
            name=run_name(session, run, run_id), request_id=request_id or str(uuid.uuid4())
        )
        response = session.call(session.jobs.RedriveRun, request)
        emit(response, output, lambda: [run_detail(response.run)])
