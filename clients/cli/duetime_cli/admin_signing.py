"""``duetime admin signing-keys ...``: a team's keys for signed calls (AddSigningKey,
ListSigningKeys, RetireSigningKey, RevokeSigningKey). Rotating without downtime: ``add`` (the
team then signs with both), give the targets the new secret, ``retire`` the old key; a key that
leaked is ``revoke``d instead, at once."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated

import typer
from rich.text import Text

from duetime.admin.v1 import admin_service_pb2 as admin_pb2
from duetime_cli.admin_calls import admin_call
from duetime_cli.commands import command
from duetime_cli.names import team_name
from duetime_cli.output import Format, OutputOption, emit, stderr
from duetime_cli.tables import DetailGrid, ListTable, detail_grid, list_table, state_text
from duetime_client.describe import when

keys = typer.Typer(
    help=(
        "A team's keys for signed calls: add, list, retire (rotate: add, then retire), revoke"
        " (a key that leaked)."
    ),
    no_args_is_help=True,
)

TeamArg = Annotated[
    str, typer.Argument(metavar="TEAM", help="The team: its id, or teams/{team_id}.")
]


def keys_table(found: Sequence[admin_pb2.SigningKey]) -> ListTable:
    table = list_table("KEY ID", "STATE", "CREATED (UTC)", "RETIRED (UTC)")
    for key in found:
        table.add_row(key.key_id, _state(key), when(key, "create_time"), when(key, "retire_time"))
    return table


def key_detail(key: admin_pb2.SigningKey) -> DetailGrid:
    return detail_grid(
        [
            ("Name", key.name),
            ("State", _state(key)),
            ("Created", when(key, "create_time")),
            ("Retired", when(key, "retire_time")),
        ]
    )


def _state(key: admin_pb2.SigningKey) -> Text:
    return state_text("RETIRED" if key.HasField("retire_time") else "ACTIVE")


@keys.command("add")
def add_key(ctx: typer.Context, team: TeamArg, output: OutputOption = Format.TABLE) -> None:
    """Add a signing key to a team and print its webhook secret, the only time it is shown.

    The secret alone goes to stdout; the key's details to stderr. With -o json|yaml, the whole
    answer goes to stdout."""
    with command(ctx, output) as session:
        request = admin_pb2.AddSigningKeyRequest(parent=team_name(team))
        response = admin_call(session, session.admin.AddSigningKey, request)
        if output is not Format.TABLE:
            emit(response, output, list)
            return
        stderr.print(key_detail(response.signing_key), crop=False)
        note = "Its webhook secret follows, shown this once only: give it to the team's targets."
        stderr.print(Text(note, style="bold yellow"), soft_wrap=True)
        sys.stdout.write(response.webhook_secret + "\n")


@keys.command("list")
def list_keys(ctx: typer.Context, team: TeamArg, output: OutputOption = Format.TABLE) -> None:
    """List a team's signing keys, oldest first, never their secrets (ListSigningKeys)."""
    with command(ctx, output) as session:
        request = admin_pb2.ListSigningKeysRequest(parent=team_name(team))
        response = admin_call(session, session.admin.ListSigningKeys, request)
        emit(response, output, lambda: [keys_table(response.signing_keys)])


KeyIdArg = Annotated[str, typer.Argument(metavar="KEY_ID", help="The key's id.")]


@keys.command("retire")
def retire_key(
    ctx: typer.Context, team: TeamArg, key_id: KeyIdArg, output: OutputOption = Format.TABLE
) -> None:
    """Retire a signing key: its secrets are erased, calls are signed without it within 30
    seconds, its public key stays in the JWKS for 10 minutes (RetireSigningKey)."""
    with command(ctx, output) as session:
        request = admin_pb2.RetireSigningKeyRequest(name=_key_name(team, key_id))
        response = admin_call(session, session.admin.RetireSigningKey, request)
        emit(response, output, lambda: [key_detail(response.signing_key)])


@keys.command("revoke")
def revoke_key(
    ctx: typer.Context, team: TeamArg, key_id: KeyIdArg, output: OutputOption = Format.TABLE
) -> None:
    """Revoke a signing key that may have leaked: it is deleted at once, its public key too
    (tokens it signed stop verifying), and no call started after is signed with it; allowed
    for the team's last key, so add a new one first (RevokeSigningKey)."""
    with command(ctx, output) as session:
        request = admin_pb2.RevokeSigningKeyRequest(name=_key_name(team, key_id))
        response = admin_call(session, session.admin.RevokeSigningKey, request)
        emit(response, output, lambda: [key_detail(response.signing_key)])


def _key_name(team: str, key_id: str) -> str:
    return f"{team_name(team)}/signingKeys/{key_id}"
