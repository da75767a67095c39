"""A job's change history: each version, the call that made it, its author (the token the
call carried) and the fields it changed; and the note a paused job keeps until resumed."""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from datetime import datetime

from duetime_core.identity import Principal
from duetime_core.jobspec import ContainerTarget, HttpTarget, JobSpec, Sealed, Target

# The fields a change can make, as UpdateJob's update_mask names them -> JobSpec's fields
# (the schedule message holds its max_runs too).
FIELD_PATHS: dict[str, tuple[str, ...]] = {
    "display_name": ("display_name",),
    "schedule": ("schedule", "max_runs"),
    "target": ("target",),
    "attempt_timeout": ("attempt_timeout",),
    "retry_policy": ("retry",),
    "misfire": ("misfire",),
    "overlap_policy": ("overlap",),
    "jitter_window": ("jitter_window",),
    "priority": ("priority",),
    "delivery": ("delivery",),
    "labels": ("labels",),
    "excluded_calendars": ("excluded_calendars",),
}
MAX_PAUSE_NOTE = 1000


class ChangeKind(enum.StrEnum):
    """The call that made a version."""

    CREATE = "CREATE"
    UPDATE = "UPDATE"
    PAUSE = "PAUSE"
    RESUME = "RESUME"
    DELETE = "DELETE"


@dataclass(frozen=True)
class VersionChange:
    """What a call did to a job, stored with the version it made."""

    kind: ChangeKind
    by: Principal | None
    fields: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class VersionRecord:
    """A stored version. ``change`` is None for versions made before changes were recorded:
    their author and call are unknown, and their fields are found by comparing definitions."""

    job_id: uuid.UUID
    version: int
    spec: JobSpec
    create_time: datetime
    change: VersionChange | None


@dataclass(frozen=True)
class JobPause:
    """Why and by whom a paused job was paused, and when (the call's time; None for a pause
    being made: the time it is stored)."""

    note: str
    by: Principal | None
    time: datetime | None = None


def _secret_names(target: Target) -> dict[str, bool]:
    """A target's secret values by name: whether each is stored sealed."""
    match target:
        case HttpTarget(headers=values) | ContainerTarget(env=values):
            return {name: isinstance(value, Sealed) for name, value in values.items()}


def _same_target(before: Target, after: Target, *, sealed_comparable: bool) -> bool:
    """Whether a target stayed the same. A value sent in clear is a change (the caller sent a
    value, not ``[REDACTED]``). Two sealed values are compared as sealed when
    ``sealed_comparable``; otherwise (definitions re-sealed since, by a key rotation) only
    their names are."""
    if sealed_comparable:
        return before == after
    if type(before) is not type(after) or _secret_names(before) != _secret_names(after):
        return False
    if any(not sealed for sealed in _secret_names(after).values()):
        return False
    match before, after:
        case HttpTarget(), HttpTarget():
            return (before.method, before.url, before.body) == (after.method, after.url, after.body)
        case ContainerTarget(), ContainerTarget():
            return (before.image, before.command, before.args) == (
                after.image,
                after.command,
                after.args,
            )
    return False


def spec_changes(before: JobSpec, after: JobSpec, *, sealed_comparable: bool = True) -> list[str]:
    """The update_mask paths whose value differs between two definitions, in FIELD_PATHS
    order."""
    changed = []
    for path, attributes in FIELD_PATHS.items():
        if path == "target":
            if not _same_target(before.target, after.target, sealed_comparable=sealed_comparable):
                changed.append(path)
        elif any(getattr(before, name) != getattr(after, name) for name in attributes):
            changed.append(path)
    return changed
