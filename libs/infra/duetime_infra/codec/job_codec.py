"""``Job`` messages <-> ``JobSpec``: the user-defined part of a job, fully validated.

Decoding checks everything and reports every bad field at once, with its full request path in
proto field names (``job.target.http.headers["X-Foo"]``), in ONE InvalidArgument. Output-only
fields (name, job_id, team, state, times, etag, DelaySchedule.run_time) are ignored. No input,
however garbled, gets anything but a JobSpec or InvalidArgument out of it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Literal

from google.protobuf.duration_pb2 import Duration

from duetime.jobs.v1 import job_pb2
from duetime_core import schedule as schedule_pkg
from duetime_core.calendars import job_calendar_problems
from duetime_core.jobspec import (
    DEFAULT_ATTEMPT_TIMEOUT,
    Delivery,
    JobSpec,
    MisfireSettings,
    OverlapPolicy,
    Priority,
    RetryPolicy,
    ScheduleSpec,
    SecretValue,
    Target,
    to_schedule,
)
from duetime_core.labels import label_problems
from duetime_core.text import text_problem
from duetime_infra.codec.policy_codec import (
    DELIVERIES,
    DELIVERY_NUMBERS,
    OVERLAP_NUMBERS,
    OVERLAP_POLICIES,
    PRIORITIES,
    PRIORITY_NUMBERS,
    encode_misfire,
    encode_retry,
    read_misfire,
    read_retry,
)
from duetime_infra.codec.schedule_codec import encode_schedule, read_max_runs, read_schedule
from duetime_infra.codec.target_codec import encode_target, read_target
from duetime_infra.codec.timeconv import timedelta_to_duration
from duetime_infra.codec.violations import Violations, format_duration, read_duration, read_enum

logger = logging.getLogger(__name__)

MAX_DISPLAY_NAME_CHARS = 200
MIN_ATTEMPT_TIMEOUT = timedelta(seconds=1)
MAX_ATTEMPT_TIMEOUT = timedelta(hours=24)
MAX_JITTER_WINDOW = timedelta(hours=1)

# Fields encode_job_spec owns; cleared first so refilling a message leaves no stale value.
_USER_FIELDS: tuple[
    Literal[
        "display_name",
        "schedule",
        "target",
        "attempt_timeout",
        "retry_policy",
        "misfire",
        "overlap_policy",
        "jitter_window",
        "priority",
        "delivery",
        "labels",
        "excluded_calendars",
    ],
    ...,
] = (
    "display_name",
    "schedule",
    "target",
    "attempt_timeout",
    "retry_policy",
    "misfire",
    "overlap_policy",
    "jitter_window",
    "priority",
    "delivery",
    "labels",
    "excluded_calendars",
)


def decode_job_spec(
    job: job_pb2.Job,
    *,
    now: datetime,
    path: str = "job",
    existing_headers: Mapping[str, SecretValue] | None = None,
    existing_env: Mapping[str, SecretValue] | None = None,
) -> JobSpec:
    """The validated JobSpec of ``job``, or InvalidArgument naming every bad field.

    ``now`` is the database clock: a delay counts from it, an interval without start_time is
    anchored on it, and the jitter window is checked against the schedule's gaps from it.
    ``existing_headers`` / ``existing_env`` are the stored secrets of the job being updated:
    a value sent as ``[REDACTED]`` takes the stored value of the same name.
    """
    v = Violations()
    display_name = _read_display_name(v, f"{path}.display_name", job.display_name)

    schedule = _read_required_schedule(job, v, now=now, path=path)
    max_runs = read_max_runs(job.schedule, v, path=f"{path}.schedule")
    target = _read_required_target(
        job, v, path=path, existing_headers=existing_headers, existing_env=existing_env
    )
    attempt_timeout = _read_attempt_timeout(job, v, path=path)
    retry = (
        read_retry(job.retry_policy, v, path=f"{path}.retry_policy")
        if job.HasField("retry_policy")
        else RetryPolicy()
    )
    misfire = (
        read_misfire(job.misfire, v, path=f"{path}.misfire")
        if job.HasField("misfire")
        else MisfireSettings()
    )
    overlap = read_enum(
        v, f"{path}.overlap_policy", job.overlap_policy, OVERLAP_POLICIES, OverlapPolicy.ALLOW
    )
    priority = read_enum(v, f"{path}.priority", job.priority, PRIORITIES, Priority.NORMAL)
    delivery = read_enum(v, f"{path}.delivery", job.delivery, DELIVERIES, Delivery.AT_LEAST_ONCE)
    jitter = read_jitter_window(
        job.jitter_window if job.HasField("jitter_window") else None,
        schedule,
        v,
        now=now,
        path=f"{path}.jitter_window",
    )

    for key, problem in label_problems(job.labels):
        v.add(f"{path}.labels" + (f"[{key!r}]" if key else ""), problem)
    for violation in job_calendar_problems(list(job.excluded_calendars)):
        v.add(f"{path}.{violation.field}", violation.description)

    v.raise_if_any()
    # Readers only return None after recording a violation.
    assert schedule is not None
    assert target is not None
    return JobSpec(
        display_name=display_name,
        schedule=schedule,
        target=target,
        attempt_timeout=attempt_timeout,
        retry=retry,
        misfire=misfire,
        overlap=overlap,
        jitter_window=jitter,
        priority=priority,
        delivery=delivery,
        labels=dict(job.labels),
        max_runs=max_runs,
        excluded_calendars=tuple(job.excluded_calendars),
    )


def _read_required_schedule(
    job: job_pb2.Job, v: Violations, *, now: datetime, path: str
) -> ScheduleSpec | None:
    """The job's schedule (required); None after recording a violation."""
    if job.HasField("schedule"):
        return read_schedule(job.schedule, v, now=now, path=f"{path}.schedule")
    v.add(f"{path}.schedule", "required")
    return None


def _read_required_target(
    job: job_pb2.Job,
    v: Violations,
    *,
    path: str,
    existing_headers: Mapping[str, SecretValue] | None,
    existing_env: Mapping[str, SecretValue] | None,
) -> Target | None:
    """The job's target (required), its ``[REDACTED]`` secrets taken from the stored ones;
    None after recording a violation."""
    if job.HasField("target"):
        return read_target(
            job.target,
            v,
            path=f"{path}.target",
            existing_headers=existing_headers,
            existing_env=existing_env,
        )
    v.add(f"{path}.target", "required")
    return None


def _read_attempt_timeout(job: job_pb2.Job, v: Violations, *, path: str) -> timedelta:
    """The job's attempt timeout, DEFAULT_ATTEMPT_TIMEOUT when not given (or not valid)."""
    if not job.HasField("attempt_timeout"):
        return DEFAULT_ATTEMPT_TIMEOUT
    return (
        read_duration(
            v,
            f"{path}.attempt_timeout",
            job.attempt_timeout,
            low=MIN_ATTEMPT_TIMEOUT,
            high=MAX_ATTEMPT_TIMEOUT,
        )
        or DEFAULT_ATTEMPT_TIMEOUT
    )


def _read_display_name(v: Violations, field: str, name: str) -> str:
    problem = text_problem(name, MAX_DISPLAY_NAME_CHARS)
    if problem is not None:
        v.add(field, problem)
    return name


def read_jitter_window(
    msg: Duration | None,
    schedule: ScheduleSpec | None,
    v: Violations,
    *,
    now: datetime,
    path: str,
) -> timedelta:
    """The jitter window (zero when unset), checked against the schedule's shortest gap.

    A window at least as long as the gap could move an occurrence past the next one, so it is
    refused. ``schedule`` None (it was invalid) skips that check rather than guessing.
    """
    if msg is None:
        return timedelta(0)
    jitter = read_duration(v, path, msg, low=timedelta(0), high=MAX_JITTER_WINDOW)
    if jitter is None:
        return timedelta(0)
    if not jitter or schedule is None:
        return jitter
    try:
        gap = schedule_pkg.shortest_gap(to_schedule(schedule), now)
    except Exception:
        # See schedule_codec._read_cron: a crash in the time code must not become INTERNAL.
        logger.exception("shortest_gap failed", extra={"action": "shortest_gap_crashed"})
        v.add(path, "could not be checked against the schedule")
        return jitter
    if gap is not None and jitter >= gap:
        v.add(
            path,
            f"must be shorter than the shortest gap between two occurrences of the schedule "
            f"({format_duration(gap)}), got {format_duration(jitter)}",
        )
    return jitter


def encode_job_spec(spec: JobSpec, out: job_pb2.Job) -> None:
    """Fill the user-defined fields of ``out`` from ``spec``, as an API response shows them.

    The schedule is in the user's own form; header and env values are ``[REDACTED]``; every
    policy carries its effective value, defaults included, so the reader sees what runs.
    """
    for name in _USER_FIELDS:
        out.ClearField(name)
    out.display_name = spec.display_name
    encode_schedule(spec.schedule, spec.max_runs, out.schedule)
    encode_target(spec.target, out.target, redact=True)
    timedelta_to_duration(spec.attempt_timeout, out.attempt_timeout)
    encode_retry(spec.retry, out.retry_policy)
    encode_misfire(spec.misfire, out.misfire)
    out.overlap_policy = OVERLAP_NUMBERS[spec.overlap]
    timedelta_to_duration(spec.jitter_window, out.jitter_window)
    out.priority = PRIORITY_NUMBERS[spec.priority]
    out.delivery = DELIVERY_NUMBERS[spec.delivery]
    out.labels.update(spec.labels)
    out.excluded_calendars.extend(spec.excluded_calendars)
