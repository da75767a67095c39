"""The tables people see: lists of jobs, runs and occurrences, and one job or run in detail;
and the two shapes every table here takes (``list_table``, ``detail_grid``), fitted to the
terminal's width as it is printed.

Ids (what people copy into the next command) and states are never cut or wrapped. A list too
wide for the terminal drops its less important columns in the order it names; free text
(names, errors) wraps at word boundaries; headers never wrap. What still does not fit (an id
longer than a narrow terminal) is printed whole, for the terminal to wrap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from google.rpc import status_pb2
from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from duetime.jobs.v1 import job_pb2, job_service_pb2, run_pb2
from duetime_client import describe
from duetime_client.describe import NONE, duration, enum_name, when
from duetime_client.status import ErrorDetails

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
    "OK": "green",
}

# Free-text columns: they wrap at word boundaries. Every other column is shown whole or not.
_WRAPPING = frozenset(
    {"NAME", "SCHEDULE", "TARGET", "REASON", "ERROR", "WORKER", "DST", "DISPLAY NAME",
     "DESCRIPTION", "OWN LIMITS", "USAGE", "LABELS", "RESULT", "PAUSE NOTE", "BY", "FIELDS",
     "NOTE"}
)  # fmt: skip
# A free-text column gets at least its header's width and this many cells (fewer if all its
# text is shorter), or it is not shown: a word up to this long never breaks, a longer one (a
# URL) folds.
_LEAST_TEXT = 20
# Between two columns of a list: a cell's padding on either side and the box's rule.
_GAP = 3
# Wide enough to measure any cell at its natural width.
_UNBOUNDED = 10_000

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


@dataclass
class ListTable:
    """A list whose columns are fitted to the terminal when it is printed: ``drop`` names the
    columns that may go, least important first; the others always show, whole. ``least``
    widens a free-text column's least width past ``_LEAST_TEXT`` (a code that must not
    fold)."""

    columns: Sequence[str]
    drop: Sequence[str] = ()
    rows: list[Sequence[str | Text]] = field(default_factory=list)
    least: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        assert set(self.drop) <= set(self.columns), self.drop

    def add_row(self, *cells: str | Text) -> None:
        self.rows.append(cells)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = self._fit(console, options)
        table = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False, show_edge=False)
        for column, width in widths.items():
            wraps = self.columns[column] in _WRAPPING
            table.add_column(self.columns[column], width=width, no_wrap=not wraps, overflow="fold")
        for row in self.rows:
            table.add_row(*(row[column] for column in widths))
        width = max(_across(widths.values()), options.max_width)
        yield from console.render(table, options.update_width(width))

    def _fit(self, console: Console, options: ConsoleOptions) -> dict[int, int]:
        """The width of each column shown, by index: the columns in ``drop`` go until the
        rest fit the terminal, then the free-text ones share what is left, the narrowest
        growing first."""
        wide = options.update_width(_UNBOUNDED)
        spans = {i: self._span(console, wide, i) for i in range(len(self.columns))}
        shown = list(spans)
        for name in self.drop:
            if _across(spans[i][0] for i in shown) <= options.max_width:
                break
            shown.remove(self.columns.index(name))
        widths = {i: spans[i][0] for i in shown}
        room = options.max_width - _across(widths.values())
        growing = [i for i in shown if widths[i] < spans[i][1]]  # free text, wrapped
        while room > 0 and growing:
            narrowest = min(growing, key=lambda i: widths[i])
            widths[narrowest] += 1
            room -= 1
            if widths[narrowest] == spans[narrowest][1]:
                growing.remove(narrowest)
        return widths

    def _span(self, console: Console, options: ConsoleOptions, column: int) -> tuple[int, int]:
        """The least and the natural width of a column: its widest cell (or header), which a
        free-text column may wrap down to ``_LEAST_TEXT`` (or its header)."""
        header = self.columns[column]
        cells = [Measurement.get(console, options, row[column]).maximum for row in self.rows]
        natural = max([len(header), *cells])
        if header not in _WRAPPING:
            return natural, natural
        return max(len(header), min(natural, self.least.get(header, _LEAST_TEXT))), natural


def _across(widths: Iterable[int]) -> int:
    """How wide a list is with columns this wide."""
    widths = list(widths)
    return sum(widths) + _GAP * (len(widths) - 1)


def list_table(
    *columns: str, drop: Sequence[str] = (), least: Mapping[str, int] | None = None
) -> ListTable:
    """A list of ``columns``; on a narrow terminal those in ``drop`` go, first named first."""
    return ListTable(columns, drop, least=least or {})


@dataclass
class DetailGrid:
    """One thing in detail: a bold key, then its value, a row each. A value wraps at word
    boundaries; a word too long for the terminal (a run's full name) is printed whole, its row
    left for the terminal to wrap, so that it can still be copied in one piece."""

    rows: Sequence[tuple[str, str | Text]]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        key_width = max((len(key) for key, _ in self.rows), default=0)
        wide = options.update_width(_UNBOUNDED)
        for key, value in self.rows:
            grid = Table.grid(padding=(0, 2))
            grid.add_column(style="bold", no_wrap=True, width=key_width)
            grid.add_column(overflow="fold")
            grid.add_row(key, value)
            longest_word = Measurement.get(console, wide, value).minimum
            width = max(options.max_width, key_width + 2 + longest_word)
            yield from console.render(grid, options.update_width(width))


def detail_grid(rows: Iterable[tuple[str, str | Text]]) -> DetailGrid:
    return DetailGrid(list(rows))


def jobs_table(jobs: Sequence[job_pb2.Job]) -> ListTable:
    """The jobs; LABELS only when one of them has labels, PAUSE NOTE when one is paused with
    a note."""
    labelled = any(job.labels for job in jobs)
    noted = any(job.pause.note for job in jobs)
    labels, notes = ["LABELS"] if labelled else [], ["PAUSE NOTE"] if noted else []
    table = list_table(
        "JOB ID", "NAME", "SCHEDULE", "TARGET", *labels, "STATE", *notes, "NEXT RUN (UTC)",
        drop=("TARGET", *labels, "SCHEDULE", *notes, "NEXT RUN (UTC)", "NAME"),
    )  # fmt: skip
    for job in jobs:
        table.add_row(
            job.job_id,
            job.display_name or NONE,
            describe.schedule(job.schedule),
            describe.target(job.target),
            *([describe.labels(job)] if labelled else []),
            job_state(job),
            *([job.pause.note or NONE] if noted else []),
            when(job, "next_run_time"),
        )
    return table


def job_detail(job: job_pb2.Job) -> DetailGrid:
    state = job_state(job)
    if job.state_reason:
        state.append(f" ({job.state_reason})")
    return detail_grid(
        [
            ("Name", job.name),
            ("Display name", job.display_name or NONE),
            ("State", state),
            *([("Paused", describe.pause(job))] if job.HasField("pause") else []),
            ("Schedule", describe.schedule(job.schedule)),
            ("Scheduled runs", describe.runs_made(job)),
            ("Next run", when(job, "next_run_time")),
            ("Target", describe.target(job.target)),
            ("Labels", describe.labels(job)),
            ("Attempt timeout", duration(job, "attempt_timeout")),
            ("Retry", describe.retry(job)),
            ("Misfire", describe.misfire(job)),
            *(
                [("Excluded calendars", ", ".join(job.excluded_calendars))]
                if job.excluded_calendars
                else []
            ),
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


def runs_table(runs: Sequence[run_pb2.Run], *, across_jobs: bool = False) -> ListTable:
    """Runs; ``across_jobs``, of several jobs: each with its job's id first (the order
    ``runs get JOB RUN_ID`` takes them in), which goes before the nominal time."""
    job = ["JOB ID"] if across_jobs else []
    table = list_table(
        *job, "RUN ID", "NOMINAL (UTC)", "ORIGIN", "STATE", "ATTEMPT", "LATE", "REASON",
        drop=("LATE", "ORIGIN", "ATTEMPT", "REASON", *job, "NOMINAL (UTC)"),
    )  # fmt: skip
    for run in runs:
        table.add_row(
            *([run.job_id] if across_jobs else []),
            run.run_id,
            when(run, "nominal_time"),
            enum_name(run_pb2.RunOrigin, run.origin, "RUN_ORIGIN_"),
            run_state(run),
            str(run.attempt),
            duration(run, "start_lateness"),
            describe.reason(run, brief=True),
        )
    return table


def run_detail(run: run_pb2.Run) -> DetailGrid:
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


def attempts_table(run: run_pb2.Run) -> ListTable:
    table = list_table(
        "ATTEMPT", "STARTED (UTC)", "ENDED (UTC)", "OUTCOME", "WORKER", "ERROR",
        drop=("ENDED (UTC)", "WORKER", "STARTED (UTC)", "ERROR"),
    )  # fmt: skip
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


def preview_table(occurrences: Sequence[job_service_pb2.ScheduledOccurrence]) -> ListTable:
    jitter = any(o.HasField("effective_time") for o in occurrences)
    excluded = any(o.excluded_by_calendar for o in occurrences)
    columns = ["#", "LOCAL TIME", "UTC", *(["MAY START (UTC)"] if jitter else []), "DST"]
    table = list_table(*columns, *(["SKIPPED BY CALENDAR"] if excluded else []), drop=("UTC",))
    for number, occurrence in enumerate(occurrences, start=1):
        note = DST_NOTES.get(occurrence.dst_adjustment, "")
        cells: list[str | Text] = [str(number), occurrence.local_time]
        cells.append(when(occurrence, "nominal_time"))
        if jitter:
            cells.append(when(occurrence, "effective_time"))
        cells.append(Text(note, style="yellow"))
        if excluded:
            cells.append(Text(occurrence.excluded_by_calendar, style="yellow"))
        table.add_row(*cells)
    return table


def versions_table(versions: Sequence[job_service_pb2.JobVersion]) -> ListTable:
    """A job's versions, newest first: when, by whom, the call and the fields it set."""
    table = list_table(
        "VERSION", "TIME (UTC)", "BY", "CHANGE", "FIELDS", "NOTE",
        drop=("NOTE", "FIELDS", "BY"),
    )  # fmt: skip
    for version in versions:
        table.add_row(
            str(version.version),
            when(version, "create_time"),
            describe.principal(version),
            describe.change(version),
            ", ".join(version.changed_fields) or NONE,
            version.note or NONE,
        )
    return table


def _occurrence(occurrence: job_service_pb2.ScheduledOccurrence) -> str:
    note = DST_NOTES.get(occurrence.dst_adjustment)
    text = f"{occurrence.local_time} ({when(occurrence, 'nominal_time')})"
    return f"{text}; {note}" if note else text


def explanation_detail(answer: job_service_pb2.ExplainOccurrenceResponse) -> DetailGrid:
    """What became of an occurrence: its fate, the answer's sentences, and what they rest on."""
    rows: list[tuple[str, str | Text]] = [
        ("Fate", state_text(describe.fate(answer))),
        ("Why", answer.explanation),
        ("Asked", when(answer, "time")),
    ]
    if answer.HasField("occurrence"):
        rows.append(("Occurrence", _occurrence(answer.occurrence)))
    if answer.HasField("run"):
        run = answer.run
        rows += [("Run", run.name), ("Run state", run_state(run))]
        if run.reason:
            rows.append(("Reason", describe.reason(run)))
        if run.occurrence_count > 1:
            rows.append(("Stands for", f"{run.occurrence_count} occurrences, {_range(run)}"))
    if answer.HasField("lateness"):
        rows.append(("Late by", duration(answer, "lateness")))
        rows.append(("Misfire", describe.misfire(answer)))
    if answer.HasField("previous_occurrence"):
        rows.append(("Before", _occurrence(answer.previous_occurrence)))
    if answer.HasField("next_occurrence"):
        rows.append(("After", _occurrence(answer.next_occurrence)))
    rows.append(("Job version", str(answer.job_version)))
    return detail_grid(rows)


def _range(run: run_pb2.Run) -> str:
    return f"{when(run, 'nominal_time')} to {when(run, 'range_end_time')}"


def batch_table(results: Sequence[job_service_pb2.BatchResult]) -> ListTable:
    """Each item of a batch and how it went: ``OK``, or its error as a single call would
    give it, its code and reason never folded. Runs with their job's id first, which goes on
    a narrow terminal."""
    texts = [_result(result.status) for result in results]
    least = {"RESULT": max([_LEAST_TEXT, *(len(word) for text, head in texts for word in head)])}
    if any("/runs/" in result.name for result in results):
        table = list_table("JOB ID", "RUN ID", "RESULT", drop=("JOB ID",), least=least)
    else:
        table = list_table("JOB ID", "RESULT", least=least)
    for result, (text, _) in zip(results, texts, strict=True):
        ids = result.name.split("/")[3::2]  # teams/T/jobs/J[/runs/R]: J[, R]
        table.add_row(*ids, text)
    return table


def _result(status: status_pb2.Status) -> tuple[Text, list[str]]:
    """The outcome's text, and the words of its code and reason."""
    if status.code == 0:
        return state_text("OK"), []
    found = ErrorDetails.from_status(status)
    head = f"{found.head}:"
    return Text(f"{head} {found.message}", style=_STYLES["FAILED"]), head.split()
