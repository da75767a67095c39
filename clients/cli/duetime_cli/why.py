"""``duetime why JOB TIME``: why an occurrence of a job ran or did not, answered by the server
from the job's run records and versions (ExplainOccurrence)."""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer

from duetime.jobs.v1 import job_service_pb2
from duetime_cli.commands import JobArg, command, instant_value, usage_error
from duetime_cli.names import job_name
from duetime_cli.output import Format, OutputOption, emit
from duetime_cli.tables import attempts_table, explanation_detail

# An instant names its offset; a wall-clock time does not.
_OFFSET = re.compile(r"(?:[Zz]|[+-]\d{2}:?\d{2})$")


def why(
    ctx: typer.Context,
    job: JobArg,
    time: Annotated[
        str,
        typer.Argument(
            metavar="TIME",
            help="A wall-clock time without offset (2026-03-08T02:30), read in --tz or the "
            "zone of the job's schedule; or an instant with its offset (2026-03-08T07:00:00Z).",
        ),
    ],
    tz: Annotated[
        str,
        typer.Option(
            metavar="ZONE",
            help="The IANA zone TIME is read in (default: the job's schedule's).",
            show_default=False,
        ),
    ] = "",
    output: OutputOption = Format.TABLE,
) -> None:
    """Why the occurrence at TIME ran or did not: ran, held, cancelled, MISSED, SKIPPED (and
    why), not an occurrence (the nearest ones), or not yet due; DST gaps and folds explained."""
    with command(ctx, output) as session:
        request = job_service_pb2.ExplainOccurrenceRequest(job=job_name(session, job))
        if _OFFSET.search(time):
            if tz:
                raise usage_error("--tz goes with a wall-clock TIME, one without an offset")
            request.time.CopyFrom(instant_value(time, "TIME"))
        else:
            request.local_time, request.time_zone = time, tz
        response = session.call(session.jobs.ExplainOccurrence, request)
        emit(response, output, lambda: _shown(response))


def _shown(response: job_service_pb2.ExplainOccurrenceResponse) -> list[Any]:
    shown: list[Any] = [explanation_detail(response)]
    if response.run.attempts:
        shown += ["", attempts_table(response.run)]
    return shown
