"""``duetime runs ...``: a job's runs or the whole team's, one run with its attempts, and
redriving dead letters, one or many at once."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from duetime.jobs.v1 import job_service_pb2, run_pb2
from duetime_cli.batch import Batch, YesOption, run_batch
from duetime_cli.commands import (
    PAGE_SIZE,
    LimitOption,
    collect,
    command,
    enum_option,
    enum_value,
    usage_error,
)
from duetime_cli.export import ExportFormat, write_runs
from duetime_cli.filters import Filter, FilterOption, SinceOption, UntilOption, run_filter
from duetime_cli.names import job_name, run_name
from duetime_cli.output import Format, OutputOption, emit
from duetime_cli.session import Session
from duetime_cli.tables import attempts_table, run_detail, runs_table

app = typer.Typer(help="Inspect runs and redrive dead-lettered ones.", no_args_is_help=True)

_RUN_HELP = (
    "The run's job (id or name) followed by RUN_ID, or the run's full name "
    "teams/{team}/jobs/{job_id}/runs/{run_id}."
)
RunArg = Annotated[str, typer.Argument(metavar="RUN", help=_RUN_HELP)]
OptionalRunArg = Annotated[
    str | None, typer.Argument(metavar="RUN", help=_RUN_HELP, show_default=False)
]
OptionalJobArg = Annotated[
    str | None,
    typer.Argument(
        metavar="JOB",
        help="The job: its id, or its name teams/{team}/jobs/{job_id}; every job of the "
        "team's when not given.",
        show_default=False,
    ),
]
# Every job of the team, as ListRuns and BatchRedriveRuns name them.
ALL_JOBS = "-"
# What a batch redrive matches when nothing narrows it: all its parent's dead letters.
DEAD_LETTERED = "state = DEAD_LETTERED"
RunIdArg = Annotated[
    str | None, typer.Argument(metavar="RUN_ID", help="The run's id, after its job.")
]

StateOption = Annotated[
    str | None, enum_option(run_pb2.RunState, "RUN_STATE_", "Only runs in this state")
]


@app.command("list")
def list_runs(
    ctx: typer.Context,
    job: OptionalJobArg = None,
    state: StateOption = None,
    filter: FilterOption = "",
    since: SinceOption = None,
    until: UntilOption = None,
    limit: LimitOption = 20,
    output: OutputOption = Format.TABLE,
) -> None:
    """List a job's runs, or every job's, latest first."""
    with command(ctx, output) as session:
        parent = _parent(session, job)
        wanted = enum_value(run_pb2.RunState, "RUN_STATE_", state, "--state")
        where = run_filter(filter, since, until)

        def page(token: str, size: int) -> tuple[list[run_pb2.Run], str]:
            request = job_service_pb2.ListRunsRequest(
                parent=parent, page_size=size, page_token=token, state=wanted, filter=where.text
            )
            response = session.call(session.jobs.ListRuns, request)
            return list(response.runs), response.next_page_token

        with where.sent():
            runs, token = collect(page, limit)
        response = job_service_pb2.ListRunsResponse(runs=runs, next_page_token=token)
        emit(response, output, lambda: [runs_table(runs, across_jobs=job is None)])


def _parent(session: Session, job: str | None) -> str:
    """The job's name, or every job of the team's (``teams/{team}/jobs/-``)."""
    return job_name(session, job if job is not None else ALL_JOBS)


@app.command()
def export(
    ctx: typer.Context,
    out: Annotated[
        Path,
        typer.Argument(
            metavar="FILE", help="Where to write (replaced if it exists).", dir_okay=False
        ),
    ],
    job: Annotated[
        str | None,
        typer.Option(metavar="JOB", help="Only this job's runs (else every job's)."),
    ] = None,
    state: StateOption = None,
    filter: FilterOption = "",
    since: SinceOption = None,
    until: UntilOption = None,
    format: Annotated[
        ExportFormat | None,
        typer.Option(
            "--format",
            help="csv (one line a run) or parquet (the attempts nested); by default from "
            "FILE's suffix.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write runs to FILE for analysis: every run --job, --state, --filter, --since and
    --until match, latest first, archived weeks included."""
    with command(ctx, Format.TABLE) as session:
        fmt = format or _format_of(out)
        parent = _parent(session, job)
        wanted = enum_value(run_pb2.RunState, "RUN_STATE_", state, "--state")
        where = run_filter(filter, since, until)

        def pages() -> Iterator[list[run_pb2.Run]]:
            token = ""
            while True:
                request = job_service_pb2.ListRunsRequest(
                    parent=parent, page_size=PAGE_SIZE, page_token=token, state=wanted,
                    filter=where.text,
                )  # fmt: skip
                response = session.call(session.jobs.ListRuns, request)
                yield list(response.runs)
                token = response.next_page_token
                if not token:
                    return

        with where.sent():
            count = write_runs(pages(), out, fmt)
        typer.echo(f"{count} runs written to {out} ({fmt.value})", err=True)


def _format_of(path: Path) -> ExportFormat:
    suffix = path.suffix.lower().lstrip(".")
    try:
        return ExportFormat(suffix)
    except ValueError:
        raise usage_error(
            f"{path}: say --format csv or parquet (or name it .csv or .parquet)"
        ) from None


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
    run: OptionalRunArg = None,
    run_id: RunIdArg = None,
    job: Annotated[
        str | None,
        typer.Option(metavar="JOB", help="Many: only this job's dead letters (else every job's)."),
    ] = None,
    filter: FilterOption = "",
    since: SinceOption = None,
    until: UntilOption = None,
    request_id: Annotated[
        str,
        typer.Option(
            help="Makes the redrive idempotent: a retry with the same id redrives no run "
            "twice. Defaults to a fresh UUID, printed."
        ),
    ] = "",
    yes: YesOption = False,
    output: OutputOption = Format.TABLE,
) -> None:
    """Send DEAD_LETTERED runs back to the queue with a fresh attempt budget: one RUN, or
    many at once, those --job, --filter, --since and --until match (counted first and asked
    about)."""
    with command(ctx, output) as session:
        many = job is not None or bool(filter.strip()) or since is not None or until is not None
        if run is not None and many:
            raise usage_error("give a RUN or --job, --filter, --since and --until, not both")
        if run is None and not many:
            raise usage_error("name a RUN, or give --job, --filter, --since or --until for many")
        request_id = request_id or str(uuid.uuid4())
        if run is not None:
            request = job_service_pb2.RedriveRunRequest(
                name=run_name(session, run, run_id), request_id=request_id
            )
            response = session.call(session.jobs.RedriveRun, request)
            emit(response, output, lambda: [run_detail(response.run)])
            return
        where = run_filter(filter, since, until)
        with where.sent():
            run_batch(session, _redrive_many(session, job, where, request_id), yes, output)


def _redrive_many(session: Session, job: str | None, where: Filter, request_id: str) -> Batch:
    """The dead letters of the job (or of every job) the filter matches; all of them when
    nothing narrows it."""
    request = job_service_pb2.BatchRedriveRunsRequest(
        parent=_parent(session, job), filter=where.text or DEAD_LETTERED, request_id=request_id
    )
    scope = "DEAD_LETTERED, " + (f"of {job}" if job is not None else "of every job")
    scope += f", matching: {where.text}" if where else ""
    note = f"Request id {request_id}: a retry with --request-id {request_id} redrives no run twice."
    return Batch(session.jobs.BatchRedriveRuns, request, "redrive", "redrove", "run", scope, note)
