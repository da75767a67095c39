"""What the pages say about the contract's values, beyond ``duetime_client.describe``: a
schedule in words with its zone, the tone (colour) of a state, a DST note, a run's reason."""

from __future__ import annotations

from functools import lru_cache

from cron_descriptor import FormatError, Options, get_description

from duetime.jobs.v1 import job_pb2, job_service_pb2, run_pb2
from duetime_client import describe
from duetime_client.describe import NONE, enum_name

# The tone of each state or outcome, as a CSS class: ok, warn, bad, info, dim.
_TONES = {
    "ACTIVE": "ok",
    "SUCCEEDED": "ok",
    "PAUSED": "warn",
    "QUEUED": "info",
    "WAITING": "info",
    "RUNNING": "info",
    "RETRY_WAIT": "warn",
    "COMPLETED": "dim",
    "MISSED": "warn",
    "SKIPPED": "warn",
    "CANCELLED": "dim",
    "ERROR": "bad",
    "DEAD_LETTERED": "bad",
    "FAILED": "bad",
    "TIMED_OUT": "bad",
    "LEASE_EXPIRED": "bad",
    "HANDED_BACK": "warn",
    "OPEN": "info",
}

DST_NOTES = {
    job_service_pb2.DST_ADJUSTMENT_SHIFTED: (
        "Shifted: the written time does not exist this night (the clocks spring forward); "
        "it runs at the first instant after the gap."
    ),
    job_service_pb2.DST_ADJUSTMENT_FOLD_FIRST_PASS: (
        "The clocks fall back this night and this wall-clock time happens twice: "
        "this is its first pass (still on summer time)."
    ),
    job_service_pb2.DST_ADJUSTMENT_FOLD_SECOND_PASS: (
        "The clocks fall back this night and this wall-clock time happens twice: "
        "this is its second pass (already on standard time)."
    ),
}


def tone(state: str) -> str:
    return _TONES.get(state, "dim")


def job_state(job: job_pb2.Job) -> str:
    return enum_name(job_pb2.JobState, job.state, "JOB_STATE_")


def run_state(run: run_pb2.Run) -> str:
    return enum_name(run_pb2.RunState, run.state, "RUN_STATE_")


def run_origin(run: run_pb2.Run) -> str:
    return enum_name(run_pb2.RunOrigin, run.origin, "RUN_ORIGIN_")


def outcome(attempt: run_pb2.Attempt) -> str:
    name = enum_name(run_pb2.AttemptOutcome, attempt.outcome, "ATTEMPT_OUTCOME_")
    return "OPEN" if name == NONE else name


@lru_cache(maxsize=1024)
def cron_words(expression: str) -> str:
    """``30 2 * * *`` as ``At 02:30``; the expression itself where it cannot be put in words."""
    options = Options()
    options.use_24hour_time_format = True
    options.verbose = False
    try:
        return str(get_description(expression, options))
    except (FormatError, ValueError, IndexError, KeyError):
        return expression


def schedule_words(schedule: job_pb2.Schedule) -> str:
    """The schedule as people say it, with its zone: ``At 02:30 (America/New_York)``,
    ``Every 5m``; the exact form is ``describe.schedule``."""
    kind = schedule.WhichOneof("kind")
    if kind == "cron":
        cron = schedule.cron
        return f"{cron_words(cron.expression)} ({cron.time_zone})"
    if kind == "interval":
        return "Every " + describe.duration(schedule.interval, "interval")
    if kind == "at" and schedule.at.local_time:
        return f"Once, at {schedule.at.local_time} ({schedule.at.time_zone})"
    if kind == "at":
        return f"Once, at {describe.when(schedule.at, 'run_time')}"
    if kind == "delay":
        return f"Once, {describe.duration(schedule.delay, 'delay')} after creation"
    return NONE


def reason(run: run_pb2.Run) -> str:
    """The run's reason and detail, ``""`` when it has none."""
    text = describe.reason(run)
    return "" if text == NONE else text
