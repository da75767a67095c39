"""``duetime``: the command line for people driving Duetime through its gRPC API.

Each group of commands is a Typer app in its own module, registered in GROUPS; the operator
group (``duetime admin ...``) is one of them, with a token of its own (``--operator-token``).
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Annotated

import typer

from duetime_cli import admin, backfill, calendars, jobs, preview, quota, runs, why
from duetime_cli.exits import EXIT_CODE_MEANINGS
from duetime_cli.session import DEFAULT_API, Session, plaintext_by_env

GROUPS: list[tuple[str, typer.Typer]] = [
    ("jobs", jobs.app),
    ("runs", runs.app),
    ("calendars", calendars.app),
    ("admin", admin.app),
]

EPILOG = "Exit codes:\n\n\b\n" + "\n".join(
    f"{int(code):>3}  {meaning}" for code, meaning in EXIT_CODE_MEANINGS.items()
)

app = typer.Typer(
    name="duetime",
    # Help fills the terminal, as wide as it is (click stops at 80 columns unless told).
    context_settings={"max_content_width": 1000},
    help="Drive Duetime's jobs and runs, and operate its teams, through its gRPC API.",
    epilog=EPILOG,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
)
for name, group in GROUPS:
    app.add_typer(group, name=name)
app.command("preview")(preview.preview)
app.command("quota")(quota.quota)
app.command("why")(why.why)
app.command("backfill")(backfill.backfill)


def _show_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"duetime {version('duetime-cli')}")
        raise typer.Exit()


@app.callback()
def connect(
    ctx: typer.Context,
    api: Annotated[
        str, typer.Option(envvar="DUETIME_API", metavar="HOST:PORT", help="The Job API's address.")
    ] = DEFAULT_API,
    token: Annotated[
        str,
        typer.Option(
            envvar="DUETIME_TOKEN", metavar="TOKEN", help="Your team token.", show_default=False
        ),
    ] = "",
    team: Annotated[
        str,
        typer.Option(
            envvar="DUETIME_TEAM",
            metavar="TEAM",
            help="Your team, to name jobs by id alone (found from the token if not given).",
            show_default=False,
        ),
    ] = "",
    ca_file: Annotated[
        str,
        typer.Option(
            envvar="DUETIME_TLS_CA_FILE",
            metavar="FILE",
            help="The CA that signed the API's certificate (default: the system's).",
            show_default=False,
        ),
    ] = "",
    plaintext: Annotated[
        bool,
        typer.Option(
            "--plaintext",
            help="Talk to an API that serves no TLS (local development only; also when "
            "DUETIME_PLAINTEXT names grpc or all).",
        ),
    ] = False,
    operator_token: Annotated[
        str,
        typer.Option(
            envvar="DUETIME_OPERATOR_TOKEN",
            metavar="TOKEN",
            help="The operator token `duetime admin` sends (else --token).",
            show_default=False,
        ),
    ] = "",
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_show_version, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    plaintext = plaintext or plaintext_by_env()
    ctx.obj = Session(api, token, team, operator_token, ca_file=ca_file, plaintext=plaintext)
