"""Quotas, teams and tokens to and from their messages (duetime.jobs.v1 TeamQuota/TeamUsage,
duetime.admin.v1 Team/Token/QuotaOverrides)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from duetime.admin.v1 import admin_service_pb2 as admin_pb2
from duetime.jobs.v1 import quota_pb2
from duetime_core.identity import Role
from duetime_core.jobspec import Priority
from duetime_core.quotas import TeamQuota, TeamState
from duetime_core.teams import (
    QUOTA_FIELDS,
    SigningKeyRecord,
    TeamRecord,
    TokenRecord,
    quota_value_problem,
)
from duetime_infra.codec.policy_codec import PRIORITIES, PRIORITY_NUMBERS
from duetime_infra.codec.target_codec import SIGNING_NUMBERS
from duetime_infra.codec.timeconv import datetime_to_timestamp
from duetime_infra.codec.violations import Violations

ROLE_NUMBERS: dict[Role, admin_pb2.TokenRole.ValueType] = {
    Role.TEAM: admin_pb2.TOKEN_ROLE_TEAM,
    Role.WORKER: admin_pb2.TOKEN_ROLE_WORKER,
    Role.OPERATOR: admin_pb2.TOKEN_ROLE_OPERATOR,
}
ROLES: dict[int, Role] = {number: role for role, number in ROLE_NUMBERS.items()}


def team_name(team_id: str) -> str:
    return f"teams/{team_id}"


def token_name(token_id: object) -> str:
    return f"tokens/{token_id}"


def encode_quota(quota: TeamQuota) -> quota_pb2.TeamQuota:
    return quota_pb2.TeamQuota(
        max_stored_jobs=quota.max_stored_jobs,
        runs_per_minute=quota.runs_per_minute,
        rate_burst=quota.rate_burst,
        max_running=quota.max_running,
        max_priority=PRIORITY_NUMBERS[quota.max_priority],
        weight=quota.weight,
    )


def encode_usage(team: TeamState, now: datetime) -> quota_pb2.TeamUsage:
    out = quota_pb2.TeamUsage(
        stored_jobs=team.stored_jobs,
        in_flight=team.in_flight,
        held_runs=team.held,
        rate_available=team.rate_available(now),
    )
    datetime_to_timestamp(team.rate_eligible_time(now), out.rate_eligible_time)
    return out


def encode_overrides(overrides: dict[str, object]) -> admin_pb2.QuotaOverrides:
    out = admin_pb2.QuotaOverrides()
    for name, value in overrides.items():
        if name == "max_priority":
            out.max_priority = PRIORITY_NUMBERS[Priority(str(value))]
        else:
            setattr(out, name, value)
    return out


def encode_team(team: TeamRecord) -> admin_pb2.Team:
    out = admin_pb2.Team(
        name=team_name(team.team_id),
        team_id=team.team_id,
        display_name=team.display_name,
        notification_url=team.notification_url,
        quota=encode_quota(team.quota),
        quota_overrides=encode_overrides(team.overrides),
        usage=encode_usage(team.usage, team.now),
        default_call_signing=SIGNING_NUMBERS[team.default_call_signing],
    )
    datetime_to_timestamp(team.create_time, out.create_time)
    return out


def encode_signing_key(key: SigningKeyRecord) -> admin_pb2.SigningKey:
    out = admin_pb2.SigningKey(
        name=f"{team_name(key.team_id)}/signingKeys/{key.key_id}", key_id=key.key_id
    )
    datetime_to_timestamp(key.create_time, out.create_time)
    if key.retire_time is not None:
        datetime_to_timestamp(key.retire_time, out.retire_time)
    return out


def encode_token(token: TokenRecord) -> admin_pb2.Token:
    out = admin_pb2.Token(
        name=token_name(token.token_id),
        token_id=str(token.token_id),
        role=ROLE_NUMBERS[token.role],
        team_id=token.team_id or "",
        description=token.description,
        worker_id_prefix=token.worker_id_prefix,
    )
    datetime_to_timestamp(token.create_time, out.create_time)
    if token.revoke_time is not None:
        datetime_to_timestamp(token.revoke_time, out.revoke_time)
    return out


def _check_mask(paths: Sequence[str], v: Violations) -> list[str]:
    if not paths:
        v.add(
            "update_mask", f"required: name the limits to change, among {', '.join(QUOTA_FIELDS)}"
        )
    unknown = [p for p in paths if p not in QUOTA_FIELDS]
    if unknown:
        v.add(
            "update_mask",
            f"cannot update {', '.join(unknown)}; updatable: {', '.join(QUOTA_FIELDS)}",
        )
    return [p for p in paths if p in QUOTA_FIELDS]


def _read_limit(v: Violations, field: str, name: str, value: int) -> int | str | None:
    """The value of limit ``name`` (a priority by its name), or None when bad (recorded)."""
    if name == "max_priority":
        priority = PRIORITIES.get(value)
        if priority is None:
            v.add(field, "must be PRIORITY_HIGH, PRIORITY_NORMAL or PRIORITY_LOW")
            return None
        return priority.value
    problem = quota_value_problem(name, value)
    if problem is not None:
        v.add(field, problem)
        return None
    return value


def read_overrides(
    msg: admin_pb2.QuotaOverrides, paths: Sequence[str], v: Violations
) -> dict[str, object | None]:
    """UpdateTeamQuota's change: each masked limit set, or reset when absent from ``msg``."""
    change: dict[str, object | None] = {}
    for name in _check_mask(paths, v):
        if msg.HasField(name):  # type: ignore[arg-type]
            change[name] = _read_limit(v, f"quota.{name}", name, getattr(msg, name))
        else:
            change[name] = None
    return change


def read_defaults(
    msg: quota_pb2.TeamQuota, paths: Sequence[str], v: Violations
) -> dict[str, object | None]:
    """UpdateQuotaDefaults' change: each masked limit set to its value in ``msg``."""
    return {
        name: _read_limit(v, f"quota.{name}", name, getattr(msg, name))
        for name in _check_mask(paths, v)
    }
