"""``duetime admin ...``: operator commands over AdminService: teams, their quotas and the
platform's defaults, bearer tokens, and teams' signing keys (``admin_signing``).

They send the operator token (``--operator-token`` / ``DUETIME_OPERATOR_TOKEN``, else
``--token`` / ``DUETIME_TOKEN``); the service refuses team and worker tokens.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from google.protobuf import field_mask_pb2
from rich.text import Text

from duetime.admin.v1 import admin_service_pb2 as admin_pb2
from duetime.jobs.v1 import job_pb2, quota_pb2
from duetime_cli.admin_calls import admin_call
from duetime_cli.admin_signing import keys as signing_keys
from duetime_cli.admin_tables import (
    team_detail,
    team_quota,
    teams_table,
    token_detail,
    tokens_table,
)
from duetime_cli.commands import LimitOption, collect, command, enum_option, enum_value
from duetime_cli.exits import ExitCode
from duetime_cli.failures import Failure
from duetime_cli.limits import check_names, fill, parse_assignments, quota_table
from duetime_cli.names import team_name, token_name
from duetime_cli.output import Format, OutputOption, emit, stderr
from duetime_cli.session import Session

app = typer.Typer(
    help="Operator commands: teams, quotas, tokens and signing keys (with an operator token).",
    no_args_is_help=True,
)
teams = typer.Typer(help="Create, list, read and change teams.", no_args_is_help=True)
quotas = typer.Typer(help="Teams' limits, and the platform's defaults.", no_args_is_help=True)
defaults = typer.Typer()
tokens = typer.Typer(help="Create, list and revoke bearer tokens.", no_args_is_help=True)
app.add_typer(teams, name="teams")
app.add_typer(quotas, name="quotas")
app.add_typer(tokens, name="tokens")
app.add_typer(signing_keys, name="signing-keys")
quotas.add_typer(defaults, name="defaults")

TeamArg = Annotated[
    str, typer.Argument(metavar="TEAM", help="The team: its id, or teams/{team_id}.")
]
DisplayNameOption = Annotated[str | None, typer.Option(metavar="TEXT", help="A name for people.")]
UrlOption = Annotated[
    str | None,
    typer.Option(metavar="URL", help="An http(s) URL the team's dead-letter events are POSTed to."),
]
SigningOption = Annotated[
    str | None,
    enum_option(
        job_pb2.CallSigning,
        "CALL_SIGNING_",
        "How the team's jobs sign their calls when a job does not say",
        "SIGNING",
    ),
]
Assignments = Annotated[
    list[str],
    typer.Argument(
        metavar="NAME=VALUE...",
        help="Limits to set, e.g. max_stored_jobs=500 max_priority=high (0: no limit).",
        show_default=False,
    ),
]
RoleOption = Annotated[
    str, enum_option(admin_pb2.TokenRole, "TOKEN_ROLE_", "What the token may do", "ROLE")
]
# Where each kind of token's secret is read from.
SECRET_HOME = {
    admin_pb2.TOKEN_ROLE_TEAM: "duetime reads it from DUETIME_TOKEN",
    admin_pb2.TOKEN_ROLE_OPERATOR: "duetime reads it from DUETIME_OPERATOR_TOKEN",
    admin_pb2.TOKEN_ROLE_WORKER: "a worker reads it from DUETIME_WORKER_TOKEN",
}


@teams.command("create")
def create_team(
    ctx: typer.Context,
    team_id: Annotated[
        str,
        typer.Argument(
            metavar="TEAM_ID",
            help="2 to 63 characters: a lower-case letter, then lower-case letters, digits, '-'.",
        ),
    ],
    display_name: DisplayNameOption = None,
    notification_url: UrlOption = None,
    output: OutputOption = Format.TABLE,
) -> None:
    """Create a team (CreateTeam); it takes the default limits until some are set."""
    with command(ctx, output) as session:
        team = admin_pb2.Team(
            team_id=team_id,
            display_name=display_name or "",
            notification_url=notification_url or "",
        )
        request = admin_pb2.CreateTeamRequest(team=team)
        response = admin_call(session, session.admin.CreateTeam, request)
        emit(response, output, lambda: team_detail(response.team))


@teams.command("list")
def list_teams(
    ctx: typer.Context,
    limit: Annotated[
        int, typer.Option(min=0, metavar="N", help="At most this many teams (0: all).")
    ] = 100,
    output: OutputOption = Format.TABLE,
) -> None:
    """List the teams in id order, with their usage and own limits (ListTeams)."""
    with command(ctx, output) as session:

        def page(token: str, size: int) -> tuple[list[admin_pb2.Team], str]:
            request = admin_pb2.ListTeamsRequest(page_size=size, page_token=token)
            response = admin_call(session, session.admin.ListTeams, request)
            return list(response.teams), response.next_page_token

        found, token = collect(page, limit)
        response = admin_pb2.ListTeamsResponse(teams=found, next_page_token=token)
        emit(response, output, lambda: [teams_table(found)])


@teams.command("get")
def get_team(ctx: typer.Context, team: TeamArg, output: OutputOption = Format.TABLE) -> None:
    """Show one team with its limits and usage (GetTeam)."""
    with command(ctx, output) as session:
        request = admin_pb2.GetTeamRequest(name=team_name(team))
        response = admin_call(session, session.admin.GetTeam, request)
        emit(response, output, lambda: team_detail(response.team))


@teams.command("update")
def update_team(
    ctx: typer.Context,
    team: TeamArg,
    display_name: DisplayNameOption = None,
    notification_url: UrlOption = None,
    default_signing: SigningOption = None,
    output: OutputOption = Format.TABLE,
) -> None:
    """Change a team's display name, notification URL ("" clears one) or how its jobs sign
    their calls when a job does not say (UpdateTeam)."""
    with command(ctx, output) as session:
        changes: dict[str, object] = {
            "display_name": display_name,
            "notification_url": notification_url,
        }
        if default_signing is not None:
            changes["default_call_signing"] = enum_value(
                job_pb2.CallSigning, "CALL_SIGNING_", default_signing, "--default-signing"
            )
        given = {name: value for name, value in changes.items() if value is not None}
        if not given:
            raise Failure.local(
                ExitCode.USAGE,
                "INVALID_ARGUMENT",
                "nothing to change: give --display-name, --notification-url or --default-signing",
            )
        changed = admin_pb2.Team(name=team_name(team))
        for name, value in given.items():
            setattr(changed, name, value)
        request = admin_pb2.UpdateTeamRequest(
            team=changed, update_mask=field_mask_pb2.FieldMask(paths=list(given))
        )
        response = admin_call(session, session.admin.UpdateTeam, request)
        emit(response, output, lambda: team_detail(response.team))


@quotas.command("get")
def get_quota(ctx: typer.Context, team: TeamArg, output: OutputOption = Format.TABLE) -> None:
    """Show a team's limits in force, which are its own, and its usage (GetTeam)."""
    with command(ctx, output) as session:
        request = admin_pb2.GetTeamRequest(name=team_name(team))
        response = admin_call(session, session.admin.GetTeam, request)
        emit(response, output, lambda: team_quota(response.team))


def _update_quota(
    session: Session, team: str, values: dict[str, int | None]
) -> admin_pb2.UpdateTeamQuotaResponse:
    overrides = admin_pb2.QuotaOverrides()
    mask = fill(overrides, values)
    request = admin_pb2.UpdateTeamQuotaRequest(
        name=team_name(team), quota=overrides, update_mask=field_mask_pb2.FieldMask(paths=mask)
    )
    return admin_call(session, session.admin.UpdateTeamQuota, request)


@quotas.command("set")
def set_quota(
    ctx: typer.Context,
    team: TeamArg,
    assignments: Assignments,
    output: OutputOption = Format.TABLE,
) -> None:
    """Set a team's own limits; NAME=default gives one back to the default (UpdateTeamQuota)."""
    with command(ctx, output) as session:
        values = parse_assignments(assignments, allow_default=True)
        response = _update_quota(session, team, values)
        emit(response, output, lambda: team_quota(response.team))


@quotas.command("reset")
def reset_quota(
    ctx: typer.Context,
    team: TeamArg,
    names: Annotated[
        list[str],
        typer.Argument(
            metavar="NAME...", help="Limits to give back to the default.", show_default=False
        ),
    ],
    output: OutputOption = Format.TABLE,
) -> None:
    """Give a team's limits back to the platform's defaults (UpdateTeamQuota)."""
    with command(ctx, output) as session:
        response = _update_quota(session, team, dict.fromkeys(check_names(names)))
        emit(response, output, lambda: team_quota(response.team))


@defaults.callback(invoke_without_command=True)
def show_defaults(ctx: typer.Context, output: OutputOption = Format.TABLE) -> None:
    """The platform's default limits, which apply to every limit a team was not given
    (GetQuotaDefaults); `defaults set NAME=VALUE...` changes them."""
    if ctx.invoked_subcommand is not None:
        return
    with command(ctx, output) as session:
        request = admin_pb2.GetQuotaDefaultsRequest()
        response = admin_call(session, session.admin.GetQuotaDefaults, request)
        emit(response, output, lambda: [quota_table(response.quota, heading="DEFAULT")])


@defaults.command("set")
def set_defaults(
    ctx: typer.Context, assignments: Assignments, output: OutputOption = Format.TABLE
) -> None:
    """Change the platform's default limits (UpdateQuotaDefaults)."""
    with command(ctx, output) as session:
        quota = quota_pb2.TeamQuota()
        mask = fill(quota, parse_assignments(assignments, allow_default=False))
        request = admin_pb2.UpdateQuotaDefaultsRequest(
            quota=quota, update_mask=field_mask_pb2.FieldMask(paths=mask)
        )
        response = admin_call(session, session.admin.UpdateQuotaDefaults, request)
        emit(response, output, lambda: [quota_table(response.quota, heading="DEFAULT")])


@tokens.command("create")
def create_token(
    ctx: typer.Context,
    role: RoleOption,
    team: Annotated[
        str, typer.Option(metavar="TEAM", help="For a team token: the team it acts for.")
    ] = "",
    description: Annotated[
        str, typer.Option(metavar="TEXT", help="A note for people: who holds it, what for.")
    ] = "",
    worker_id_prefix: Annotated[
        str,
        typer.Option(
            metavar="PREFIX",
            help="For a worker token: the worker ids it may act for begin with this.",
        ),
    ] = "",
    output: OutputOption = Format.TABLE,
) -> None:
    """Create a token and print its secret, the only time it is shown (CreateToken).

    The secret alone goes to stdout (TOKEN=$(duetime admin tokens create ...)); the token's
    details to stderr. With -o json|yaml, the whole answer goes to stdout."""
    with command(ctx, output) as session:
        token = admin_pb2.Token(
            role=enum_value(admin_pb2.TokenRole, "TOKEN_ROLE_", role, "--role"),
            team_id=team.removeprefix("teams/"),
            description=description,
            worker_id_prefix=worker_id_prefix,
        )
        response = admin_call(
            session, session.admin.CreateToken, admin_pb2.CreateTokenRequest(token=token)
        )
        if output is not Format.TABLE:
            emit(response, output, list)
            return
        stderr.print(token_detail(response.token), crop=False)
        note = f"Its secret follows, shown this once only: keep it now ({SECRET_HOME[token.role]})."
        stderr.print(Text(note, style="bold yellow"), soft_wrap=True)
        sys.stdout.write(response.secret + "\n")


@tokens.command("list")
def list_tokens(
    ctx: typer.Context,
    team: Annotated[str, typer.Option(metavar="TEAM", help="Only this team's tokens.")] = "",
    include_revoked: Annotated[
        bool, typer.Option("--include-revoked", help="Revoked tokens too.")
    ] = False,
    limit: LimitOption = 100,
    output: OutputOption = Format.TABLE,
) -> None:
    """List tokens, newest first; never their secrets (ListTokens)."""
    with command(ctx, output) as session:

        def page(page_token: str, size: int) -> tuple[list[admin_pb2.Token], str]:
            request = admin_pb2.ListTokensRequest(
                team_id=team.removeprefix("teams/"),
                include_revoked=include_revoked,
                page_size=size,
                page_token=page_token,
            )
            response = admin_call(session, session.admin.ListTokens, request)
            return list(response.tokens), response.next_page_token

        found, next_token = collect(page, limit)
        response = admin_pb2.ListTokensResponse(tokens=found, next_page_token=next_token)
        emit(response, output, lambda: [tokens_table(found)])


@tokens.command("revoke")
def revoke_token(
    ctx: typer.Context,
    token: Annotated[
        str, typer.Argument(metavar="TOKEN", help="The token's id, or tokens/{token_id}.")
    ],
    output: OutputOption = Format.TABLE,
) -> None:
    """Revoke a token; services refuse it within 10 seconds (RevokeToken)."""
    with command(ctx, output) as session:
        request = admin_pb2.RevokeTokenRequest(name=token_name(token))
        response = admin_call(session, session.admin.RevokeToken, request)
        emit(response, output, lambda: [token_detail(response.token)])
