"""The tables operators see: teams with their quota and usage, and tokens (never a secret
but the one just created)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import RenderableType

from duetime.admin.v1 import admin_service_pb2 as admin_pb2
from duetime.jobs.v1 import job_pb2
from duetime_cli.limits import held_text, own_limits, quota_table
from duetime_cli.tables import DetailGrid, ListTable, detail_grid, list_table, state_text
from duetime_client.describe import NONE, enum_name, when


def teams_table(teams: Sequence[admin_pb2.Team]) -> ListTable:
    table = list_table(
        "TEAM ID", "DISPLAY NAME", "STORED JOBS", "IN FLIGHT", "HELD", "OWN LIMITS",
        "CREATED (UTC)",
        drop=("CREATED (UTC)", "OWN LIMITS", "HELD", "IN FLIGHT", "STORED JOBS", "DISPLAY NAME"),
    )  # fmt: skip
    for team in teams:
        table.add_row(
            team.team_id,
            team.display_name or NONE,
            str(team.usage.stored_jobs),
            str(team.usage.in_flight),
            str(team.usage.held_runs),
            own_limits(team.quota_overrides),
            when(team, "create_time"),
        )
    return table


def team_detail(team: admin_pb2.Team) -> list[RenderableType]:
    """The team, then each limit in force (the team's own or the default) and its usage."""
    grid = detail_grid(
        [
            ("Name", team.name),
            ("Display name", team.display_name or NONE),
            ("Notification URL", team.notification_url or NONE),
            ("Call signing", signing(team)),
            ("Created", when(team, "create_time")),
            ("Held runs", held_text(team.usage)),
        ]
    )
    return [grid, "", quota_table(team.quota, team.usage, team.quota_overrides)]


def signing(team: admin_pb2.Team) -> str:
    """How the team's jobs sign their calls when a job does not say."""
    return enum_name(job_pb2.CallSigning, team.default_call_signing, "CALL_SIGNING_")


def team_quota(team: admin_pb2.Team) -> list[RenderableType]:
    """A team's limits in force (its own or the default) and its usage."""
    grid = detail_grid([("Team", team.name), ("Held runs", held_text(team.usage))])
    return [grid, "", quota_table(team.quota, team.usage, team.quota_overrides)]


def role(token: admin_pb2.Token) -> str:
    return enum_name(admin_pb2.TokenRole, token.role, "TOKEN_ROLE_")


def tokens_table(tokens: Sequence[admin_pb2.Token]) -> ListTable:
    table = list_table(
        "TOKEN ID", "ROLE", "TEAM", "DESCRIPTION", "CREATED (UTC)", "REVOKED (UTC)",
        drop=("CREATED (UTC)", "REVOKED (UTC)", "DESCRIPTION"),
    )  # fmt: skip
    for token in tokens:
        table.add_row(
            token.token_id,
            role(token),
            token.team_id or NONE,
            token.description or NONE,
            when(token, "create_time"),
            when(token, "revoke_time"),
        )
    return table


def token_detail(token: admin_pb2.Token) -> DetailGrid:
    revoked = token.HasField("revoke_time")
    return detail_grid(
        [
            ("Name", token.name),
            ("Role", role(token)),
            ("Team", token.team_id or NONE),
            *([("Worker ids", f"{token.worker_id_prefix}*")] if token.worker_id_prefix else []),
            ("Description", token.description or NONE),
            ("Created", when(token, "create_time")),
            ("State", state_text("REVOKED") if revoked else state_text("VALID")),
            *([("Revoked", when(token, "revoke_time"))] if revoked else []),
        ]
    )
