"""Short human text for the contract's values: times, durations, enums, schedules, targets."""

from __future__ import annotations

import re
from datetime import UTC, timedelta
from typing import Any

from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from duetime.jobs.v1 import job_pb2, job_service_pb2, run_pb2

NONE = "-"

# The team limit behind each QuotaLimit, named as TeamQuota names it.
QUOTA_LIMIT_FIELDS = {
    run_pb2.QUOTA_LIMIT_RATE: "runs_per_minute",
    run_pb2.QUOTA_LIMIT_CONCURRENCY: "max_running",
}


def when(message: Message, field: str) -> str:
    """A Timestamp field as ``2026-12-01 20:30:00Z`` (whole seconds, UTC), or ``-`` unset."""
    if not message.HasField(field):
        return NONE
    value: Timestamp = getattr(message, field)
    moment = value.ToDatetime(UTC)
    text = moment.strftime("%Y-%m-%d %H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond // 1000:03d}"
    return text + "Z"


def span(td: timedelta) -> str:
    """A duration as people write it: ``1h30m``, ``45s``, ``1.5s``, ``100ms``."""
    if td < timedelta(0):
        return "-" + span(-td)
    if not td:
        return "0s"
    ms = td // timedelta(milliseconds=1)
    if ms == 0:
        return f"{td // timedelta(microseconds=1)}us"
    if ms < 1000:
        return f"{ms}ms"
    days, rest = divmod(ms, 86_400_000)
    hours, rest = divmod(rest, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (rest / 1000, "s")]
    return "".join(f"{n:g}{unit}" for n, unit in parts if n)


def duration(message: Message, field: str) -> str:
    """A Duration field as ``span``, or ``-`` unset (the server's default applies)."""
    if not message.HasField(field):
        return NONE
    value: Duration = getattr(message, field)
    return span(value.ToTimedelta())


def enum_name(enum_type: Any, value: int, prefix: str) -> str:
    """``JOB_STATE_ACTIVE`` as ``ACTIVE``; an unset (zero) value as ``-``."""
    if value == 0:
        return NONE
    try:
        name: str = enum_type.Name(value)
    except ValueError:
        return str(value)
    return name.removeprefix(prefix)


def quota_limit(run: run_pb2.Run) -> str:
    """The limit that holds (or held) the run back: ``runs_per_minute`` or ``max_running``."""
    if not run.quota_limit:
        return NONE
    return QUOTA_LIMIT_FIELDS.get(run.quota_limit) or enum_name(
        run_pb2.QuotaLimit, run.quota_limit, "QUOTA_LIMIT_"
    )


def reason(run: run_pb2.Run, *, brief: bool = False) -> str:
    """The run's reason and its detail; ``brief`` (a list, a progress line) names a quota by
    its limit alone: ``QUOTA: max_running``."""
    name = enum_name(run_pb2.RunReason, run.reason, "RUN_REASON_")
    if brief and run.reason == run_pb2.RUN_REASON_QUOTA and run.quota_limit:
        return f"{name}: {quota_limit(run)}"
    return name if not run.reason_detail else f"{name}: {run.reason_detail}"


def next_run_moved(response: job_service_pb2.UpdateJobResponse) -> str:
    """What an update did to the job's next run, in one line."""
    before, after = when(response, "previous_next_run_time"), when(response.job, "next_run_time")
    if not response.schedule_changed:
        return f"Schedule unchanged: the next run stays at {after}."
    if before == after:
        return f"Schedule changed: the next run stays at {after}."
    return f"Schedule changed: the next run moved from {before} to {after}."


def schedule(value: job_pb2.Schedule) -> str:
    kind = value.WhichOneof("kind")
    if kind == "cron":
        cron = value.cron
        text = f"cron {cron.expression} ({cron.time_zone})"
        return text + _dst_policies(cron.gap_policy, cron.fold_policy)
    if kind == "interval":
        text = f"every {duration(value.interval, 'interval')}"
        if value.interval.HasField("start_time"):
            text += f" from {when(value.interval, 'start_time')}"
        elif value.interval.HasField("anchor_time"):
            text += f", anchored at {when(value.interval, 'anchor_time')}"
        return text
    if kind == "at":
        at = value.at
        if at.local_time:
            return f"at {at.local_time} ({at.time_zone})" + _dst_policies(
                at.gap_policy, at.fold_policy
            )
        return f"at {when(at, 'run_time')}"
    if kind == "delay":
        return f"once, {duration(value.delay, 'delay')} after creation"
    return NONE


def _dst_policies(gap: int, fold: int) -> str:
    notes = []
    if gap:
        notes.append("gap " + enum_name(job_pb2.DstGapPolicy, gap, "DST_GAP_POLICY_").lower())
    if fold:
        notes.append("fold " + enum_name(job_pb2.DstFoldPolicy, fold, "DST_FOLD_POLICY_").lower())
    return f" [{', '.join(notes)}]" if notes else ""


def target(value: job_pb2.Target) -> str:
    kind = value.WhichOneof("kind")
    if kind == "http":
        method = enum_name(job_pb2.HttpMethod, value.http.method, "HTTP_METHOD_")
        return f"{'POST' if method == NONE else method} {value.http.url}"
    if kind == "container":
        words = [value.container.image, *value.container.command, *value.container.args]
        return "container " + " ".join(words)
    return NONE


def retry(job: job_pb2.Job) -> str:
    if not job.HasField("retry_policy"):
        return NONE
    policy = job.retry_policy
    attempts = policy.max_attempts or "default"
    backoff = f"{duration(policy, 'initial_backoff')}..{duration(policy, 'max_backoff')}"
    multiplier = f"x{policy.multiplier:g}" if policy.multiplier else "x default"
    return f"{attempts} attempts, backoff {backoff} {multiplier}"


def misfire(job: job_pb2.Job) -> str:
    if not job.HasField("misfire"):
        return NONE
    settings = job.misfire
    policy = enum_name(job_pb2.MisfirePolicy, settings.policy, "MISFIRE_POLICY_")
    return f"{policy}, threshold {duration(settings, 'threshold')}"


_SPAN_PART = re.compile(r"(\d+(?:\.\d+)?)(us|ms|s|m|h|d)")
_UNIT = {
    "us": timedelta(microseconds=1),
    "ms": timedelta(milliseconds=1),
    "s": timedelta(seconds=1),
    "m": timedelta(minutes=1),
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
}


def parse_span(text: str) -> timedelta:
    """The inverse of ``span``: ``1h30m``, ``90s``, ``1.5s``, ``100ms``; a bare number is
    seconds. ValueError otherwise."""
    text = text.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return timedelta(seconds=float(text))
    parts = _SPAN_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"{text!r} is not a duration like 90s, 5m or 1h30m")
    return sum((float(n) * _UNIT[u] for n, u in parts), timedelta())
