"""``duetime preview``: the next fire times of a schedule (or a stored job), with what DST does
to each, computed by the server with the scheduler's own code (PreviewSchedule)."""

from __future__ import annotations

from typing import Annotated

import typer

from duetime.jobs.v1 import job_pb2, job_service_pb2
from duetime_cli.commands import (
    command,
    duration_value,
    enum_option,
    enum_value,
    instant_value,
)
from duetime_cli.names import job_name
from duetime_cli.output import Format, OutputOption, emit
from duetime_cli.tables import preview_table

SOURCES = ("--cron", "--every", "--at", "--at-local", "--delay", "--job")


def _policies(
    gap: str | None, fold: str | None
) -> tuple[job_pb2.DstGapPolicy.ValueType, job_pb2.DstFoldPolicy.ValueType]:
    return (
        enum_value(job_pb2.DstGapPolicy, "DST_GAP_POLICY_", gap, "--gap-policy"),
        enum_value(job_pb2.DstFoldPolicy, "DST_FOLD_POLICY_", fold, "--fold-policy"),
    )


def _schedule(
    cron: str | None,
    every: str | None,
    at: str | None,
    at_local: str | None,
    delay: str | None,
    tz: str,
    start: str | None,
    policies: tuple[job_pb2.DstGapPolicy.ValueType, job_pb2.DstFoldPolicy.ValueType],
) -> job_pb2.Schedule:
    gap, fold = policies
    if cron is not None:
        cron_schedule = job_pb2.CronSchedule(
            expression=cron, time_zone=tz, gap_policy=gap, fold_policy=fold
        )
        return job_pb2.Schedule(cron=cron_schedule)
    if every is not None:
        interval = job_pb2.IntervalSchedule(interval=duration_value(every, "--every"))
        if start is not None:
            interval.start_time.CopyFrom(instant_value(start, "--start"))
        return job_pb2.Schedule(interval=interval)
    if at is not None:
        return job_pb2.Schedule(at=job_pb2.AtSchedule(run_time=instant_value(at, "--at")))
    if at_local is not None:
        local = job_pb2.AtSchedule(
            local_time=at_local, time_zone=tz, gap_policy=gap, fold_policy=fold
        )
        return job_pb2.Schedule(at=local)
    assert delay is not None
    return job_pb2.Schedule(delay=job_pb2.DelaySchedule(delay=duration_value(delay, "--delay")))


def preview(
    ctx: typer.Context,
    cron: Annotated[
        str | None, typer.Option(metavar="EXPR", help="A cron expression (5 or 6 fields).")
    ] = None,
    every: Annotated[
        str | None, typer.Option(metavar="DURATION", help="An interval: 90s, 5m, 1h30m.")
    ] = None,
    at: Annotated[str | None, typer.Option(metavar="TIME", help="One instant, RFC 3339.")] = None,
    at_local: Annotated[
        str | None,
        typer.Option(metavar="LOCAL", help="One wall-clock time (2026-03-08T02:30:00) in --tz."),
    ] = None,
    delay: Annotated[
        str | None, typer.Option(metavar="DURATION", help="Once, this long from now.")
    ] = None,
    job: Annotated[
        str | None, typer.Option(metavar="JOB", help="A stored job (id or name): with jitter.")
    ] = None,
    tz: Annotated[
        str, typer.Option(metavar="ZONE", help="IANA time zone of --cron / --at-local.")
    ] = "UTC",
    gap_policy: Annotated[
        str | None,
        enum_option(
            job_pb2.DstGapPolicy, "DST_GAP_POLICY_", "A time in the spring-forward gap", "POLICY"
        ),
    ] = None,
    fold_policy: Annotated[
        str | None,
        enum_option(
            job_pb2.DstFoldPolicy, "DST_FOLD_POLICY_", "A time that happens twice", "POLICY"
        ),
    ] = None,
    start: Annotated[
        str | None, typer.Option(metavar="TIME", help="With --every: the series' anchor.")
    ] = None,
    end: Annotated[
        str | None,
        typer.Option(metavar="TIME", help="With --cron or --every: the last instant it runs at."),
    ] = None,
    max_runs: Annotated[
        int | None,
        typer.Option(min=1, metavar="N", help="With --cron or --every: at most N runs."),
    ] = None,
    after: Annotated[
        str | None,
        typer.Option(metavar="TIME", help="Occurrences strictly after this instant (default now)."),
    ] = None,
    count: Annotated[
        int, typer.Option(min=1, max=1000, metavar="N", help="How many occurrences.")
    ] = 10,
    output: OutputOption = Format.TABLE,
) -> None:
    """Show a schedule's next fire times and what DST does to them."""
    given = [
        o
        for o, v in zip(SOURCES, (cron, every, at, at_local, delay, job), strict=True)
        if v is not None
    ]
    if len(given) != 1:
        raise typer.BadParameter(f"give exactly one of {', '.join(SOURCES)}")
    if job is not None and (end is not None or max_runs is not None):
        raise typer.BadParameter("--end and --max-runs go with a schedule; a job has its own")
    with command(ctx, output) as session:
        request = job_service_pb2.PreviewScheduleRequest(count=count)
        if after is not None:
            request.start_time.CopyFrom(instant_value(after, "--after"))
        if job is not None:
            request.job = job_name(session, job)
        else:
            policies = _policies(gap_policy, fold_policy)
            request.schedule.CopyFrom(
                _schedule(cron, every, at, at_local, delay, tz, start, policies)
            )
            if end is not None:
                request.schedule.end_time.CopyFrom(instant_value(end, "--end"))
            if max_runs is not None:
                request.schedule.max_runs = max_runs
        response = session.call(session.jobs.PreviewSchedule, request)
        emit(response, output, lambda: [preview_table(response.occurrences)])
