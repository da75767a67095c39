"""Teams and tokens as operators see them: plain data, no I/O."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime

from duetime_core.identity import Role
from duetime_core.jobspec import CallSigning
from duetime_core.quotas import TeamQuota, TeamState


@dataclass(frozen=True)
class TeamRecord:
    """A team as operators see it: its own quota overrides (absent: the default), the limits
    in force, and its usage."""

    team_id: str
    display_name: str
    notification_url: str
    create_time: datetime
    quota: TeamQuota
    overrides: dict[str, object]
    usage: TeamState
    now: datetime
    # How its jobs sign their calls when a job does not say.
    default_call_signing: CallSigning = CallSigning.OFF


@dataclass(frozen=True)
class TokenRecord:
    token_id: uuid.UUID
    role: Role
    team_id: str | None
    description: str
    create_time: datetime
    revoke_time: datetime | None
    # A worker token's binding: the worker ids it acts for begin with it ('': any).
    worker_id_prefix: str = ""


@dataclass(frozen=True)
class SigningKeyRecord:
    """A generation of a team's keys for signed calls, without its secrets."""

    team_id: str
    key_id: str
    create_time: datetime
    retire_time: datetime | None


# A team's id: what the teams table's CHECK accepts.
TEAM_ID = re.compile(r"^[a-z][a-z0-9-]{1,62}$")
MAX_DESCRIPTION = 1000
# A signing key's id: what the team_signing_keys table's CHECK accepts.
SIGNING_KEY_ID = re.compile(r"^[a-z0-9]{1,32}$")

# The quota's limits by name, with the range an operator may set (max_priority: any priority).
QUOTA_BOUNDS: dict[str, tuple[int, int]] = {
    "max_stored_jobs": (0, 10**12),
    "runs_per_minute": (0, 10**9),
    "rate_burst": (1, 10**9),
    "max_running": (0, 10**9),
    "weight": (1, 1000),
}
QUOTA_FIELDS = (
    "max_stored_jobs",
    "runs_per_minute",
    "rate_burst",
    "max_running",
    "max_priority",
    "weight",
)


def team_id_problem(team_id: str) -> str | None:
    if TEAM_ID.match(team_id):
        return None
    return "2 to 63 characters: a lower-case letter, then lower-case letters, digits and '-'"


def quota_value_problem(name: str, value: int) -> str | None:
    """Why ``value`` cannot be the limit ``name`` (an integer limit); None when it can."""
    low, high = QUOTA_BOUNDS[name]
    if low <= value <= high:
        return None
    return f"must be from {low} to {high}" + (" (0: no limit)" if low == 0 else "")
