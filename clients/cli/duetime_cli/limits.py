"""A team's quota limits, named as the contract names them (``max_stored_jobs`` ...
``weight``): read from ``NAME=VALUE`` arguments, and shown beside what the team uses.

The names and their order come from ``duetime.jobs.v1.TeamQuota`` itself, so a limit the
contract gains is accepted and shown without a change here.
"""

from __future__ import annotations

from collections.abc import Sequence

import typer
from google.protobuf.message import Message

from duetime.admin.v1 import admin_service_pb2
from duetime.jobs.v1 import job_pb2, quota_pb2
from duetime_cli.commands import enum_choices
from duetime_cli.tables import ListTable, list_table
from duetime_client.describe import NONE, enum_name, when

LIMITS: tuple[str, ...] = tuple(f.name for f in quota_pb2.TeamQuota.DESCRIPTOR.fields)
PRIORITY = "max_priority"
# In `quotas set`, the value that gives a limit back to the platform's default.
DEFAULT = "default"


def _bad(argument: str, why: str) -> typer.BadParameter:
    return typer.BadParameter(why, param_hint=f"'{argument}'")


def check_names(names: Sequence[str]) -> list[str]:
    """The limits named, each known; a usage error naming the first that is not."""
    for name in names:
        if name not in LIMITS:
            raise _bad(name, f"not a limit; the limits are {', '.join(LIMITS)}")
    return list(dict.fromkeys(names))


def _value(argument: str, name: str, text: str) -> int:
    if name == PRIORITY:
        choices = enum_choices(job_pb2.Priority, "PRIORITY_")
        word = text.upper().removeprefix("PRIORITY_")
        if word not in choices:
            raise _bad(argument, f"{name} is one of {', '.join(choices)}")
        return job_pb2.Priority.Value("PRIORITY_" + word)
    try:
        return int(text)
    except ValueError:
        raise _bad(argument, f"{name} is a whole number") from None


def parse_assignments(arguments: Sequence[str], *, allow_default: bool) -> dict[str, int | None]:
    """``NAME=VALUE`` arguments as values by limit name; None (``NAME=default``, where
    allowed) gives the limit back to the default. A usage error names a bad argument; the
    server checks the ranges."""
    values: dict[str, int | None] = {}
    for argument in arguments:
        name, sep, text = argument.partition("=")
        if not sep or not text:
            raise _bad(argument, "expected NAME=VALUE, e.g. max_stored_jobs=500")
        check_names([name])
        if text == DEFAULT and allow_default:
            values[name] = None
        else:
            values[name] = _value(argument, name, text)
    return values


def fill(message: Message, values: dict[str, int | None]) -> list[str]:
    """Sets the values given on ``message`` (a TeamQuota or QuotaOverrides, whose fields are
    named alike); returns the update mask: every limit named, set or reset."""
    for name, value in values.items():
        if value is not None:
            setattr(message, name, value)
    return list(values)


def limit_text(quota: Message, name: str, *, plain: bool = False) -> str:
    """A limit's value for people (``no limit`` for 0, a priority by its name); ``plain``: as
    `quotas set` takes it."""
    value: int = getattr(quota, name)
    if name == PRIORITY:
        return enum_name(job_pb2.Priority, value, "PRIORITY_")
    return "no limit" if value == 0 and not plain else str(value)


def _usage(usage: quota_pb2.TeamUsage, name: str) -> str:
    if name == "max_stored_jobs":
        return f"{usage.stored_jobs} stored"
    if name == "max_running":
        return f"{usage.in_flight} in flight"
    if name == "rate_burst":
        return f"{usage.rate_available} free now"
    if name == "runs_per_minute" and not usage.rate_available:
        return f"next at {when(usage, 'rate_eligible_time')}"
    return NONE


def quota_table(
    quota: quota_pb2.TeamQuota,
    usage: quota_pb2.TeamUsage | None = None,
    overrides: admin_service_pb2.QuotaOverrides | None = None,
    heading: str = "IN FORCE",
) -> ListTable:
    """One row a limit: its value (under ``heading``), with ``overrides`` whether the team's
    own or the default, with ``usage`` what the team uses of it."""
    columns = ["LIMIT", heading]
    columns += ["SET BY"] if overrides is not None else []
    columns += ["USAGE"] if usage is not None else []
    table = list_table(*columns)
    for name in LIMITS:
        cells = [name, limit_text(quota, name)]
        if overrides is not None:
            cells.append("team" if overrides.HasField(name) else "default")  # type: ignore[arg-type]
        if usage is not None:
            cells.append(_usage(usage, name))
        table.add_row(*cells)
    return table


def held_text(usage: quota_pb2.TeamUsage) -> str:
    return f"{usage.held_runs} WAITING (QUOTA or FAIR_SHARE)"


def own_limits(overrides: admin_service_pb2.QuotaOverrides) -> str:
    """The limits set for the team itself, as ``name=value``; ``-`` none."""
    own = [
        f"{name}={limit_text(overrides, name, plain=True)}"
        for name in LIMITS
        if overrides.HasField(name)  # type: ignore[arg-type]
    ]
    return ", ".join(own) or NONE
