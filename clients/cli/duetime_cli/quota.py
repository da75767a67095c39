"""``duetime quota``: the calling team's limits in force and what it uses of them."""

from __future__ import annotations

import typer

from duetime.jobs.v1 import job_service_pb2
from duetime_cli.commands import command
from duetime_cli.limits import held_text, quota_table
from duetime_cli.output import Format, OutputOption, emit
from duetime_cli.tables import detail_grid


def quota(ctx: typer.Context, output: OutputOption = Format.TABLE) -> None:
    """Show your team's quota: each limit in force and the usage now (GetTeamQuota)."""
    with command(ctx, output) as session:
        request = job_service_pb2.GetTeamQuotaRequest()
        response = session.call(session.jobs.GetTeamQuota, request)
        summary = detail_grid([("Team", response.name), ("Held runs", held_text(response.usage))])
        emit(response, output, lambda: [summary, "", quota_table(response.quota, response.usage)])
