"""Short human text for the contract's values: times, durations, enums, schedules, targets."""

from __future__ import annotations

import re
from datetime import UTC, timedelta
from decimal import Decimal
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


# Nanoseconds in each unit ``span`` writes, and microseconds in those it counts in.
_NS = {"us": 1000, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9, "d": 86400 * 10**9}
_US = {unit: ns // 1000 for unit, ns in _NS.items()}
_SPAN = re.compile(r"(\d+(?:\.\d+)?)(us|ms|s|m|h|d)")
# A duration in proto3 JSON: seconds with up to nine decimals (to the nanosecond).
_JSON_DURATION = re.compile(r"-?\d+(?:\.\d{1,9})?s")
# protobuf's Duration spans +-10,000 years.
_MAX_SECONDS = 315_576_000_000


def span(td: timedelta) -> str:
    """A duration as people write it: ``1h30m``, ``45s``, ``1.5s``, ``100ms``, ``250us``; to
    the microsecond, so that ``parse_duration`` reads back the same value."""
    if td < timedelta(0):
        return "-" + span(-td)
    us = td // timedelta(microseconds=1)
    if not us:
        return "0s"
    if us < 1000:
        return f"{us}us"
    if us < _US["s"]:
        return _decimal(us, 1000) + "ms"
    days, rest = divmod(us, _US["d"])
    hours, rest = divmod(rest, _US["h"])
    minutes, rest = divmod(rest, _US["m"])
    parts = [(str(days), "d"), (str(hours), "h"), (str(minutes), "m")]
    parts.append((_decimal(rest, _US["s"]), "s"))
    return "".join(number + unit for number, unit in parts if number != "0")


def _decimal(units: int, per: int) -> str:
    """``units / per`` (``per`` a power of ten) in decimals, without trailing zeros."""
    whole, fraction = divmod(units, per)
    if not fraction:
        return str(whole)
    return f"{whole}.{fraction:0{len(str(per)) - 1}d}".rstrip("0")


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


def principal(message: Message, field: str = "principal") -> str:
    """Who made a change: its token's description (``deploy pipeline``), else the token's name
    (``tokens/…``); ``unknown`` when it was not recorded."""
    if not message.HasField(field):
        return "unknown"
    value: job_pb2.Principal = getattr(message, field)
    return value.description or value.token


def pause(job: job_pb2.Job) -> str:
    """A paused job's pause in one line: ``by deploy pipeline at 2026-12-06 10:00:00Z: "why"``;
    ``-`` for a job that is not paused."""
    if not job.HasField("pause"):
        return NONE
    text = f"by {principal(job.pause)} at {when(job.pause, 'pause_time')}"
    return text + (f': "{job.pause.note}"' if job.pause.note else "")


def change(version: job_service_pb2.JobVersion) -> str:
    """The call that made a version (``UPDATE``), ``unknown`` when not recorded."""
    name = enum_name(job_service_pb2.JobChange, version.change, "JOB_CHANGE_")
    return "unknown" if name == NONE else name


def fate(answer: job_service_pb2.ExplainOccurrenceResponse) -> str:
    return enum_name(job_service_pb2.OccurrenceFate, answer.fate, "OCCURRENCE_FATE_")


def occurrences(span: job_service_pb2.OccurrenceSpan) -> str:
    """``60, 2026-06-01 12:01:00Z to 2026-06-01 13:00:00Z``; ``none``."""
    if not span.count:
        return "none"
    first, last = when(span, "first_time"), when(span, "last_time")
    return f"{span.count}, {first}" if span.count == 1 else f"{span.count}, {first} to {last}"


def backfill_count(counted: job_service_pb2.BackfillJobResponse) -> str:
    """A backfill's count: its occurrences, from when to when, how many already ran (left out
    by SKIP_RAN) and how many runs it makes."""
    if not counted.occurrence_count:
        return "no occurrence of the schedule in the range"
    first, last = when(counted, "first_occurrence_time"), when(counted, "last_occurrence_time")
    text = f"{counted.occurrence_count} occurrences from {first} to {last}"
    if counted.skipped_count:
        text += f", {counted.skipped_count} of them already ran"
    if counted.excluded_count:
        text += f", {counted.excluded_count} on days the job's calendars exclude (recorded SKIPPED)"
    return f"{text}: {counted.run_count} runs"


def paused_occurrences(told: job_service_pb2.PausedOccurrences) -> list[str]:
    """What a resume does with the occurrences its pause covered, a line each."""
    lines = [f"covered by the pause: {occurrences(told.covered)}"]
    if told.skipped.count:
        lines.append(f"recorded SKIPPED: {occurrences(told.skipped)}")
    if told.catch_up_runs:
        times = ", ".join(when(o, "nominal_time") for o in told.catch_up_runs[:5])
        more = f" and {len(told.catch_up_runs) - 5} more" if len(told.catch_up_runs) > 5 else ""
        lines.append(f"run late (catch-up): {len(told.catch_up_runs)}: {times}{more}")
    if told.on_time_runs:
        lines.append(f"run as on time: {len(told.on_time_runs)}")
    if told.too_old.count:
        lines.append(f"MISSED as too old: {occurrences(told.too_old)}")
    if told.missed.count:
        lines.append(f"MISSED by the misfire policy: {occurrences(told.missed)}")
    if told.truncated:
        lines.append("more than 100,000 occurrences: the counts are lower bounds")
    return lines


def next_run_moved(response: job_service_pb2.UpdateJobResponse) -> str:
    """What an update did to the job's next run, in one line."""
    before, after = when(response, "previous_next_run_time"), when(response.job, "next_run_time")
    if not response.schedule_changed:
        return f"Schedule unchanged: the next run stays at {after}."
    if before == after:
        return f"Schedule changed: the next run stays at {after}."
    return f"Schedule changed: the next run moved from {before} to {after}."


def schedule(value: job_pb2.Schedule) -> str:
    """``every 30s, anchored at … until 2026-12-31 00:00:00Z, at most 3 runs``."""
    text = _series(value)
    if value.HasField("end_time"):
        text += f" until {when(value, 'end_time')}"
    if value.HasField("max_runs"):
        text += f", at most {value.max_runs} run{'' if value.max_runs == 1 else 's'}"
    return text


def _series(value: job_pb2.Schedule) -> str:
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


def runs_made(job: job_pb2.Job) -> str:
    """How many runs the schedule made, of its max_runs: ``2 of at most 3``."""
    made = str(job.scheduled_runs)
    return made + (
        f" of at most {job.schedule.max_runs}" if job.schedule.HasField("max_runs") else ""
    )


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


def labels(job: job_pb2.Job) -> str:
    """``env=prod, tier=gold``, by key; ``-`` none."""
    return ", ".join(f"{key}={value}" for key, value in sorted(job.labels.items())) or NONE


def retry(job: job_pb2.Job) -> str:
    if not job.HasField("retry_policy"):
        return NONE
    policy = job.retry_policy
    attempts = policy.max_attempts or "default"
    backoff = f"{duration(policy, 'initial_backoff')}..{duration(policy, 'max_backoff')}"
    multiplier = f"x{policy.multiplier:g}" if policy.multiplier else "x default"
    return f"{attempts} attempts, backoff {backoff} {multiplier}"


def misfire(message: job_pb2.Job | job_service_pb2.ExplainOccurrenceResponse) -> str:
    """A job's misfire settings (or those an explained occurrence was judged by)."""
    if not message.HasField("misfire"):
        return NONE
    settings = message.misfire
    policy = enum_name(job_pb2.MisfirePolicy, settings.policy, "MISFIRE_POLICY_")
    return f"{policy}, threshold {duration(settings, 'threshold')}"


def parse_duration(text: str) -> Duration:
    """A duration as ``span`` writes it (``1h30m``, ``90s``, ``1.5s``, ``100ms``, ``2d``,
    ``-5s``), in proto3 JSON (``300s``, ``0.000000001s``), or a bare number of seconds: what
    every option and job file of the CLI takes. ValueError otherwise, naming the forms."""
    text = text.strip()
    too_long = ValueError(f"{text!r} is longer than a duration can be (10,000 years)")
    value = Duration()
    if _JSON_DURATION.fullmatch(text):
        try:
            value.FromJsonString(text)  # to the nanosecond
        except ValueError:
            raise too_long from None
        return value
    sign, digits = (-1, text[1:]) if text.startswith("-") else (1, text)
    if re.fullmatch(r"\d+(?:\.\d+)?", digits):
        digits += "s"
    parts = _SPAN.findall(digits)
    if not parts or "".join(n + u for n, u in parts) != digits:
        raise ValueError(f"{text!r} is not a duration like 90s, 5m, 1h30m or 2d")
    value.FromNanoseconds(sign * int(sum(Decimal(n) * _NS[unit] for n, unit in parts)))
    if abs(value.seconds) > _MAX_SECONDS:
        raise too_long
    return value
