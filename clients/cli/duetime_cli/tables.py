"""The tables people see: lists of jobs, runs and occurrences, and one job or run in detail;
and the two shapes every table here takes (``list_table``, ``detail_grid``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich import box
from rich.table import Table
from rich.text import Text

from duetime.jobs.v1 import job_pb2, job_service_pb2, run_pb2
from duetime_cli import describe
from duetime_cli.describe import NONE, duration, enum_name, when

_STYLES = {
    "ACTIVE": "green",
    "SUCCEEDED": "green",
    "PAUSED": "yellow",
    "QUEUED": "cyan",
    "WAITING": "cyan",
    "RUNNING": "cyan",
    "RETRY_WAIT": "yellow",
    "COMPLETED": "dim",
    "MISSED": "yellow",
    "SKIPPED": "yellow",
    "CANCELLED": "yellow",
    "ERROR": "bold red",
    "DEAD_LETTERED": "bold red",
    "FAILED": "red",
    "TIMED_OUT": "red",
    "LEASE_EXPIRED": "red",
    "HANDED_BACK": "yellow",
    "VALID": "green",
    "REVOKED": "dim",
}

_WRAPPING = frozenset(
    {"NAME", "SCHEDULE", "TARGET", "REASON", "ERROR", "WORKER", "DST", "DISPLAY NAME",
     "DESCRIPTION", "OWN LIMITS", "USAGE"}
)  # fmt: skip

DST_NOTES = {
    job_service_pb2.DST_ADJUSTMENT_SHIFTED: "shifted: the written time is in the DST gap",
    job_service_pb2.DST_ADJUSTMENT_FOLD_FIRST_PASS: "fold: first pass of a repeated time",
    job_service_pb2.DST_ADJUSTMENT_FOLD_SECOND_PASS: "fold: second pass of a repeated time",
}


def state_text(name: str) -> Text:
    return Text(name, style=_STYLES.get(name, ""))


def job_state(job: job_pb2.Job) -> Text:
    return state_text(enum_name(job_pb2.JobState, job.state, "JOB_STATE_"))


def run_state(run: run_pb2.Run) -> Text:
    return state_text(enum_name(run_pb2.RunState, run.state, "RUN_STATE_"))


def list_table(*columns: str) -> Table:
    """A list; on a narrow terminal only its free-text columns wrap: ids stay whole (to be
    copied into the next command), and so do times, states and counts."""
    table = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False, show_edge=False)
    for column in columns:
        wraps = column in _WRAPPING
        table.add_column(column, no_wrap=not wraps, overflow="fold" if wraps else "ellipsis")
    return table


def detail_grid(rows: Iterable[tuple[str, str | Text]]) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    for key, value in rows:
        grid.add_row(key, value)
    return grid


def jobs_table(jobs: Sequence[job_pb2.Job]) -> Table:
    table = list_table("JOB ID", "NAME", "SCHEDULE", "TARGET", "STATE", "NEXT RUN (UTC)")
    for job in jobs:
        table.add_row(
            job.job_id,
            job.display_name or NONE,
            describe.schedule(job.schedule),
            describe.target(job.target),
            job_state(job),
            when(job, "next_run_time"),
        )
    return table


def job_detail(job: job_pb2.Job) -> Table:
    state = job_state(job)
    if job.state_reason:
        state.append(f" ({job.state_reason})")
    return detail_grid(
        [
            ("Name", job.name),
            ("Display name", job.display_name or NONE),
            ("State", state),
            ("Schedule", describe.schedule(job.schedule)),
            ("Next run", when(job, "next_run_time")),
            ("Target", describe.target(job.target)),
            ("Attempt timeout", duration(job, "attempt_timeout")),
            ("Retry", describe.retry(job)),
            ("Misfire", describe.misfire(job)),
            ("Overlap", enum_name(job_pb2.OverlapPolicy, job.overlap_policy, "OVERLAP_POLICY_")),
            ("Jitter window", duration(job, "jitter_window")),
            ("Priority", enum_name(job_pb2.Priority, job.priority, "PRIORITY_")),
            ("Created", when(job, "create_time")),
            ("Updated", when(job, "update_time")),
            ("Etag", job.etag),
        ]
    )


def _held(run: run_pb2.Run) -> bool:
    return run.state == run_pb2.RUN_STATE_WAITING and run.reason == run_pb2.RUN_REASON_QUOTA


def runs_table(runs: Sequence[run_pb2.Run]) -> Table:
    table = list_table("RUN ID", "NOMINAL (UTC)", "ORIGIN", "STATE", "ATTEMPT", "LATE", "REASON")
    for run in runs:
        table.add_row(
            run.run_id,
            when(run, "nominal_time"),
            enum_name(run_pb2.RunOrigin, run.origin, "RUN_ORIGIN_"),
            run_state(run),
            str(run.attempt),
            duration(run, "start_lateness"),
            describe.reason(run, brief=True),
        )
    return table


def run_detail(run: run_pb2.Run) -> Table:
    # A run its quota still holds has not become eligible, whatever the field's placeholder.
    eligible = f"not yet: held by {describe.quota_limit(run)}" if _held(run) else None
    rows: list[tuple[str, str | Text]] = [
        ("Name", run.name),
        ("State", run_state(run)),
        ("Reason", describe.reason(run)),
        ("Origin", enum_name(run_pb2.RunOrigin, run.origin, "RUN_ORIGIN_")),
        ("Nominal time", when(run, "nominal_time")),
        ("Effective time", when(run, "effective_time")),
        ("Eligible time", eligible or when(run, "eligible_time")),
        ("Quota delay", duration(run, "quota_delay")),
        *([("Quota limit", describe.quota_limit(run))] if run.quota_limit else []),
        ("Start lateness", duration(run, "start_lateness")),
        ("Attempt", str(run.attempt)),
        ("Next attempt", when(run, "next_attempt_time")),
        ("Idempotency key", run.idempotency_key),
        ("Trace id", run.trace_id or NONE),
    ]
    if run.occurrence_count > 1:
        rows.append(("Occurrences", f"{run.occurrence_count}, to {when(run, 'range_end_time')}"))
    return detail_grid(rows)


def attempts_table(run: run_pb2.Run) -> Table:
    table = list_table("ATTEMPT", "STARTED (UTC)", "ENDED (UTC)", "OUTCOME", "WORKER", "ERROR")
    for attempt in run.attempts:
        outcome = enum_name(run_pb2.AttemptOutcome, attempt.outcome, "ATTEMPT_OUTCOME_")
        table.add_row(
            str(attempt.number),
            when(attempt, "start_time"),
            when(attempt, "end_time"),
            state_text("open" if outcome == NONE else outcome),
            attempt.worker or NONE,
            attempt.error or NONE,
        )
    return table


def preview_table(occurrences: Sequence[job_service_pb2.ScheduledOccurrence]) -> Table:
    jitter = any(o.HasField("effective_time") for o in occurrences)
    columns = ["#", "LOCAL TIME", "UTC", *(["MAY START (UTC)"] if jitter else []), "DST"]
    table = list_table(*columns)
    for number, occurrence in enumerate(occurrences, start=1):
        note = DST_NOTES.get(occurrence.dst_adjustment, "")
        cells: list[str | Text] = [str(number), occurrence.local_time]
        cells.append(when(occurrence, "nominal_time"))
        if jitter:
            cells.append(when(occurrence, "effective_time"))
        cells.append(Text(note, style="yellow"))
        table.add_row(*cells)
    return table
