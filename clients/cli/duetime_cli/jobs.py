"""``duetime jobs ...``: create, read, find, change, pause, resume (one or many at once),
delete and trigger jobs."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from google.protobuf import field_mask_pb2

from duetime.jobs.v1 import job_pb2, job_service_pb2, run_pb2
from duetime_cli.batch import Batch, BatchResponse, YesOption, run_batch
from duetime_cli.commands import (
    EtagOption,
    JobArg,
    LimitOption,
    collect,
    command,
    enum_option,
    enum_value,
    usage_error,
)
from duetime_cli.exits import ExitCode
from duetime_cli.filters import FilterOption, LabelOption, job_filter
from duetime_cli.jobfile import parse_job, read_mapping
from duetime_cli.names import job_name
from duetime_cli.output import Format, OutputOption, emit
from duetime_cli.session import Session
from duetime_cli.tables import (
    attempts_table,
    job_detail,
    jobs_table,
    preview_table,
    run_detail,
    versions_table,
)
from duetime_cli.wait import follow
from duetime_client import describe
from duetime_client.describe import next_run_moved
from duetime_client.jobtext import update_paths

app = typer.Typer(help="Create, read, change and trigger jobs.", no_args_is_help=True)

FileOption = Annotated[
    str,
    typer.Option(
        "--file",
        "-f",
        metavar="FILE",
        help="A job as proto3 JSON or YAML (duetime.jobs.v1.Job); - reads stdin.",
    ),
]
StateOption = Annotated[
    str | None, enum_option(job_pb2.JobState, "JOB_STATE_", "Only jobs in this state")
]


@app.command()
def create(
    ctx: typer.Context,
    file: FileOption,
    request_id: Annotated[
        str, typer.Option(help="Makes the create idempotent: a retry returns the same job.")
    ] = "",
    output: OutputOption = Format.TABLE,
) -> None:
    """Create a job from a file."""
    with command(ctx, output) as session:
        source = Path(file)
        job = parse_job(read_mapping(source), source)
        request = job_service_pb2.CreateJobRequest(job=job, request_id=request_id)
        response = session.call(session.jobs.CreateJob, request)
        emit(response, output, lambda: [job_detail(response.job)])


@app.command("list")
def list_jobs(
    ctx: typer.Context,
    state: StateOption = None,
    filter: FilterOption = "",
    label: LabelOption = None,
    limit: LimitOption = 100,
    output: OutputOption = Format.TABLE,
) -> None:
    """List the team's jobs, newest first."""
    with command(ctx, output) as session:
        wanted = enum_value(job_pb2.JobState, "JOB_STATE_", state, "--state")
        where = job_filter(filter, label)

        def page(token: str, size: int) -> tuple[list[job_pb2.Job], str]:
            request = job_service_pb2.ListJobsRequest(
                page_size=size, page_token=token, state=wanted, filter=where.text
            )
            response = session.call(session.jobs.ListJobs, request)
            return list(response.jobs), response.next_page_token

        with where.sent():
            jobs, token = collect(page, limit)
        response = job_service_pb2.ListJobsResponse(jobs=jobs, next_page_token=token)
        emit(response, output, lambda: [jobs_table(jobs)])


@app.command()
def get(ctx: typer.Context, job: JobArg, output: OutputOption = Format.TABLE) -> None:
    """Show one job."""
    with command(ctx, output) as session:
        request = job_service_pb2.GetJobRequest(name=job_name(session, job))
        response = session.call(session.jobs.GetJob, request)
        emit(response, output, lambda: [job_detail(response.job)])


@app.command()
def update(
    ctx: typer.Context,
    job: Annotated[
        str | None,
        typer.Argument(metavar="JOB", help="The job; defaults to the file's name field."),
    ] = None,
    file: Annotated[
        str | None,
        typer.Option(
            "--file",
            "-f",
            metavar="FILE",
            help="The fields to change, as in a job file (a saved `jobs get -o yaml` works: "
            "its output-only fields are left out, its etag is checked).",
        ),
    ] = None,
    display_name: Annotated[str | None, typer.Option(help="A new display name.")] = None,
    etag: EtagOption = "",
    dry_run: DryRunOption = False,
    count: Annotated[
        int,
        typer.Option(
            min=1, max=100, metavar="N", help="With --dry-run: how many next runs to show."
        ),
    ] = 10,
    output: OutputOption = Format.TABLE,
) -> None:
    """Change the fields given in the file or by options; the others keep their values. With
    --dry-run, change nothing: show the job as it would be and its next runs before and after."""
    with command(ctx, output) as session:
        changes, paths = _changes(file, display_name)
        ref = job or changes.name
        if not ref:
            raise usage_error("name the job to update")
        changes.name = job_name(session, ref)
        changes.etag = etag or changes.etag
        request = job_service_pb2.UpdateJobRequest(
            job=changes,
            update_mask=field_mask_pb2.FieldMask(paths=paths),
            validate_only=dry_run,
            preview_count=count if dry_run else 0,
        )
        response = session.call(session.jobs.UpdateJob, request)
        emit(response, output, lambda: _updated(response, dry_run))


def _updated(response: job_service_pb2.UpdateJobResponse, dry_run: bool) -> list[Any]:
    shown: list[Any] = [job_detail(response.job), "", next_run_moved(response)]
    if dry_run:
        shown += [
            "",
            "Nothing changed (--dry-run). The next runs now:",
            preview_table(response.current_occurrences),
            "After the change:",
            preview_table(response.updated_occurrences),
        ]
    return shown


def _changes(file: str | None, display_name: str | None) -> tuple[job_pb2.Job, list[str]]:
    """The job carrying the new values, and the mask: the file's fields (less output-only
    ones) plus those given by options."""
    changes, paths = job_pb2.Job(), []
    if file is not None:
        source = Path(file)
        data: dict[str, Any] = read_mapping(source)
        changes = parse_job(data, source)
        paths += update_paths(data)
    if display_name is not None:
        changes.display_name = display_name
        paths.append("display_name")
    if not paths:
        raise usage_error("nothing to change: give --file or an option")
    return changes, list(dict.fromkeys(paths))


JobsArg = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="JOB",
        help="The jobs: ids, or names teams/{team}/jobs/{job_id}. Several, or --filter or "
        "--label instead, are counted first and asked about.",
        show_default=False,
    ),
]


_Changed = job_service_pb2.PauseJobResponse | job_service_pb2.ResumeJobResponse


DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Change nothing: show what the call would do.")
]


@dataclass(frozen=True)
class _Change:
    """Pause or resume: the call for one job and the batch's, and the state a filter picks
    jobs in."""

    verb: str
    done: str
    state: str
    one: Callable[[Session], Callable[..., _Changed]]
    one_request: type[job_service_pb2.PauseJobRequest | job_service_pb2.ResumeJobRequest]
    many: Callable[[Session], Callable[..., BatchResponse]]
    many_request: type[
        job_service_pb2.BatchPauseJobsRequest | job_service_pb2.BatchResumeJobsRequest
    ]


_PAUSE = _Change(
    "pause", "paused", "ACTIVE",
    lambda session: session.jobs.PauseJob, job_service_pb2.PauseJobRequest,
    lambda session: session.jobs.BatchPauseJobs, job_service_pb2.BatchPauseJobsRequest,
)  # fmt: skip
_RESUME = _Change(
    "resume", "resumed", "PAUSED",
    lambda session: session.jobs.ResumeJob, job_service_pb2.ResumeJobRequest,
    lambda session: session.jobs.BatchResumeJobs, job_service_pb2.BatchResumeJobsRequest,
)  # fmt: skip


@app.command()
def pause(
    ctx: typer.Context,
    jobs: JobsArg = None,
    filter: FilterOption = "",
    label: LabelOption = None,
    note: Annotated[
        str,
        typer.Option(
            metavar="TEXT",
            help="Why: kept with each job (shown by jobs get and list) until it is resumed.",
        ),
    ] = "",
    etag: EtagOption = "",
    yes: YesOption = False,
    output: OutputOption = Format.TABLE,
) -> None:
    """Pause jobs: their occurrences are SKIPPED until they are resumed. Many at once: the
    ACTIVE jobs --filter and --label match, or several JOBs."""
    _change(ctx, _PAUSE, jobs, filter, label, etag, yes, output, {"note": note})


@app.command()
def resume(
    ctx: typer.Context,
    jobs: JobsArg = None,
    filter: FilterOption = "",
    label: LabelOption = None,
    catch_up: Annotated[
        bool,
        typer.Option(
            "--catch-up",
            help="One JOB: let its misfire policy decide the paused occurrences (run late or "
            "MISSED) instead of skipping them.",
        ),
    ] = False,
    dry_run: DryRunOption = False,
    etag: EtagOption = "",
    yes: YesOption = False,
    output: OutputOption = Format.TABLE,
) -> None:
    """Resume paused jobs from now (missed occurrences are not caught up, unless --catch-up);
    what becomes of the paused occurrences is shown, with --dry-run before anything changes.
    Many at once: the PAUSED jobs --filter and --label match, or several JOBs."""
    alone = {"catch_up": catch_up, "validate_only": dry_run}
    _change(ctx, _RESUME, jobs, filter, label, etag, yes, output, {}, alone)


def _change(
    ctx: typer.Context,
    change: _Change,
    jobs: list[str] | None,
    filter: str,
    labels: list[str] | None,
    etag: str,
    yes: bool,
    output: Format,
    fields: dict[str, Any],
    alone: dict[str, Any] | None = None,
) -> None:
    """One job changed at once (its detail shown), or many as a batch; ``fields`` go in both
    requests, ``alone`` (flags by field) only with one JOB."""
    with command(ctx, output) as session:
        one = _single(jobs, filter, labels, etag)
        if one is not None:
            request = change.one_request(
                name=job_name(session, one), etag=etag, **fields, **(alone or {})
            )
            response = session.call(change.one(session), request)
            dry_run = bool((alone or {}).get("validate_only"))
            emit(response, output, lambda: _changed(response, dry_run))
            return
        if any((alone or {}).values()):
            raise usage_error("--catch-up and --dry-run go with one JOB")
        names, where = [job_name(session, job) for job in jobs or ()], job_filter(filter, labels)
        many = change.many_request(names=names, filter=where.text, **fields)
        scope = "as named" if names else f"{change.state}, matching: {where.text}"
        batch = Batch(change.many(session), many, change.verb, change.done, "job", scope)
        with where.sent():
            run_batch(session, batch, yes, output)


def _changed(response: _Changed, dry_run: bool) -> list[Any]:
    """A job paused or resumed (or as it would be), and for a resume what became (or would
    become) of the paused occurrences."""
    shown: list[Any] = [job_detail(response.job)]
    if isinstance(response, job_service_pb2.ResumeJobResponse):
        told = response.paused_occurrences
        shown += ["", *describe.paused_occurrences(told)]
    if dry_run:
        shown += ["", "Nothing changed (--dry-run)."]
    return shown


@app.command()
def history(
    ctx: typer.Context, job: JobArg, limit: LimitOption = 100, output: OutputOption = Format.TABLE
) -> None:
    """A job's versions, newest first: when, by which token, the call, the fields it set."""
    with command(ctx, output) as session:
        name = job_name(session, job)

        def page(token: str, size: int) -> tuple[list[job_service_pb2.JobVersion], str]:
            request = job_service_pb2.ListJobVersionsRequest(
                parent=name, page_size=size, page_token=token
            )
            response = session.call(session.jobs.ListJobVersions, request)
            return list(response.versions), response.next_page_token

        versions, token = collect(page, limit)
        response = job_service_pb2.ListJobVersionsResponse(versions=versions, next_page_token=token)
        emit(response, output, lambda: [versions_table(versions)])


def _single(jobs: list[str] | None, filter: str, labels: list[str] | None, etag: str) -> str | None:
    """The one JOB a pause or resume names, or None for many (a batch); a usage error for
    options that do not go together."""
    matching = bool(filter.strip() or labels)
    if not jobs and not matching:
        raise usage_error("name a JOB, or give --filter or --label for many")
    if jobs and matching:
        raise usage_error("give JOBs or --filter and --label, not both")
    if jobs and len(jobs) == 1:
        return jobs[0]
    if etag:
        raise usage_error("--etag goes with one JOB")
    return None


@app.command()
def delete(
    ctx: typer.Context, job: JobArg, etag: EtagOption = "", output: OutputOption = Format.TABLE
) -> None:
    """Delete a job; its run history stays readable."""
    with command(ctx, output) as session:
        name = job_name(session, job)
        request = job_service_pb2.DeleteJobRequest(name=name, etag=etag)
        response = session.call(session.jobs.DeleteJob, request)
        emit(response, output, lambda: [f"deleted {name}"])


@app.command()
def trigger(
    ctx: typer.Context,
    job: JobArg,
    wait: Annotated[
        bool, typer.Option("--wait", help="Follow the run until it ends; exit 10 unless SUCCEEDED.")
    ] = False,
    timeout: Annotated[
        float, typer.Option(min=0, help="With --wait: give up after this many seconds (exit 9).")
    ] = 0,
    request_id: Annotated[
        str, typer.Option(help="Makes the trigger idempotent; defaults to a fresh UUID.")
    ] = "",
    output: OutputOption = Format.TABLE,
) -> None:
    """Start one run now, outside the schedule."""
    with command(ctx, output) as session:
        request = job_service_pb2.TriggerJobRequest(
            name=job_name(session, job), request_id=request_id or str(uuid.uuid4())
        )
        run = session.call(session.jobs.TriggerJob, request).run
        if wait:
            run = follow(session, run, timeout)
        response = job_service_pb2.TriggerJobResponse(run=run)
        emit(response, output, lambda: [run_detail(run), attempts_table(run)])
        if wait and run.state != run_pb2.RUN_STATE_SUCCEEDED:
            raise typer.Exit(ExitCode.RUN_FAILED)
