"""Why an occurrence ran or did not: ExplainOccurrence's answer, from the facts the store keeps
(the run records, a range record standing for many occurrences, the job's versions) and the
one time function.

The time asked is read first (``read_asked``): an instant, or a wall-clock time in a zone,
which names one instant, two (a fall-back fold) or none (a spring-forward gap: then the
instant the gap ends, where a shifted occurrence runs and a skipped one is recorded). For each
instant the store gives the record at it (or a range that may cover it) and the job's version
in force then; ``explain`` decides the fate:

* a record stands for it: it ran (with the run's state and attempts), is held before dispatch,
  was cancelled, MISSED (the misfire policy, and how late it was), or SKIPPED (the reason);
  a run a backfill made of it is told too, and stands for it when the schedule made none;
* no record: it is no occurrence of the schedule in force then (the nearest ones before and
  after are given, DST explained), or comes after the schedule's end (its end_time, or the
  run that makes its max_runs), or it is not due yet, or skipped while the job is paused
  (recorded at the resume), or no record is kept of it (before the job existed, history retired).
"""

from __future__ import annotations

import dataclasses
import enum
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from duetime_core.calendars import CalendarRules, excluded_by
from duetime_core.ending import end_time_of, runs_left
from duetime_core.history import JobPause
from duetime_core.jobspec import (
    AtLocal,
    JobSpec,
    JobState,
    MisfirePolicy,
    MisfireSettings,
    ScheduleSpec,
    to_schedule,
)
from duetime_core.planning import effective_time
from duetime_core.preview import MAX_PREVIEW, DstAdjustment, PreviewItem, preview_item, zone_of
from duetime_core.records import JobRecord, RunReason, RunRecord, RunState
from duetime_core.runkey import RunKey
from duetime_core.schedule import is_fixed_time, load_zone, next_fire_time
from duetime_core.schedule.cron_match import compile_cron
from duetime_core.schedule.dst import WallKind, offset_at, read_wall, transition_in, wall_clock
from duetime_core.schedule.model import Cron, FoldPolicy, GapPolicy, Schedule
from duetime_core.schedule.previous import previous_fire_time
from duetime_core.text import rounded_span

_BEFORE = timedelta(microseconds=1)


class Fate(enum.StrEnum):
    RAN = "RAN"
    HELD = "HELD"
    CANCELLED = "CANCELLED"
    MISSED = "MISSED"
    SKIPPED = "SKIPPED"
    NOT_AN_OCCURRENCE = "NOT_AN_OCCURRENCE"
    NOT_YET_DUE = "NOT_YET_DUE"
    UNRECORDED = "UNRECORDED"


_FATE_OF_STATE = {
    RunState.QUEUED: Fate.RAN,
    RunState.RUNNING: Fate.RAN,
    RunState.RETRY_WAIT: Fate.RAN,
    RunState.SUCCEEDED: Fate.RAN,
    RunState.DEAD_LETTERED: Fate.RAN,
    RunState.WAITING: Fate.HELD,
    RunState.CANCELLED: Fate.CANCELLED,
    RunState.MISSED: Fate.MISSED,
    RunState.SKIPPED: Fate.SKIPPED,
}


@dataclass(frozen=True)
class DstNote:
    """The DST transition the time asked (or its occurrence) met: a gap or a fold."""

    kind: WallKind
    at: datetime  # the first instant on the new offset
    offset_before: timedelta
    offset_after: timedelta
    zone: str


@dataclass(frozen=True)
class Asked:
    """The time a caller asks about: an ``instant``, or a naive wall-clock ``local`` time;
    ``zone`` (None: the job's schedule's) reads ``local`` and shows the answer's wall-clock
    times."""

    zone: str | None
    instant: datetime | None = None
    local: datetime | None = None


@dataclass(frozen=True)
class Reading:
    """The instants the time asked names (one; two in a fold; the gap's end for a wall time in
    a gap), its wall-clock reading, and the DST transition it fell in, if any."""

    instants: tuple[datetime, ...]
    wall: datetime
    kind: WallKind
    zone: str
    dst: DstNote | None


@dataclass(frozen=True)
class VersionAt:
    version: int
    spec: JobSpec
    create_time: datetime


@dataclass(frozen=True)
class Facts:
    """What the store keeps about one instant of a job: the record at it, or the latest range
    record starting before it that reaches it (it may not stand for it), with the version it
    was written under; and the version in force at the instant."""

    instant: datetime
    record: RunRecord | None
    record_version: VersionAt | None
    version: VersionAt
    # The latest run a backfill made of the occurrence (one per BackfillJob request).
    backfill: RunRecord | None = None


@dataclass(frozen=True)
class Explanation:
    fate: Fate
    text: str
    instant: datetime
    version: int
    occurrence: PreviewItem | None = None
    run: RunRecord | None = None
    previous: PreviewItem | None = None
    next: PreviewItem | None = None
    dst: DstNote | None = None
    lateness: timedelta | None = None
    misfire: MisfireSettings | None = None


def _note(kind: WallKind, low: datetime, high: datetime, zone: ZoneInfo, name: str) -> DstNote:
    """The transition between two readings of one wall-clock time (a gap's or a fold's)."""
    at = transition_in(low, high, zone)
    return DstNote(kind, at, offset_at(at - timedelta(seconds=1), zone), offset_at(at, zone), name)


def read_asked(asked: Asked, job_zone: str) -> Reading:
    """Where the time asked falls, read in its zone or else ``job_zone``. ValueError for an
    unknown zone or a wall-clock time out of range."""
    name = asked.zone or job_zone
    zone = load_zone(name)
    if asked.instant is not None:
        wall = wall_clock(asked.instant, zone)
        reading = read_wall(wall, zone)
        dst = None
        if reading.kind is WallKind.FOLD:
            dst = _note(WallKind.FOLD, reading.earlier, reading.later, zone, name)
        return Reading((asked.instant,), wall, reading.kind, name, dst)
    assert asked.local is not None
    try:
        reading = read_wall(asked.local, zone)
        if reading.kind is WallKind.ORDINARY:
            return Reading((reading.earlier,), asked.local, reading.kind, name, None)
        dst = _note(reading.kind, reading.earlier, reading.later, zone, name)
    except OverflowError as error:
        raise ValueError(f"{asked.local.isoformat()} in {name} is out of range") from error
    if reading.kind is WallKind.FOLD:
        return Reading((reading.earlier, reading.later), asked.local, reading.kind, name, dst)
    return Reading((dst.at,), asked.local, reading.kind, name, dst)


def _fires_at(schedule: Schedule, instant: datetime) -> bool:
    return next_fire_time(schedule, instant - _BEFORE) == instant


def _gap_skip_at(schedule: Schedule, instant: datetime) -> bool:
    """Whether a DST gap under SKIP dropped an occurrence whose shifted time is ``instant``."""
    if not (isinstance(schedule, Cron) and schedule.gap is GapPolicy.SKIP):
        return False
    shifted = dataclasses.replace(schedule, gap=GapPolicy.SHIFT)
    return _fires_at(shifted, instant) and not _fires_at(schedule, instant)


def _wall_fires(spec: ScheduleSpec, wall: datetime) -> bool:
    """Whether a wall-clock time that does not exist (a gap) is one the schedule names:
    a fixed-time cron matching it, or a one-off written at it. Elapsed-time schedules name
    no wall-clock time."""
    if isinstance(spec, Cron):
        matcher = compile_cron(spec.expression)
        return matcher.fixed_time and matcher.first_at_or_after(wall) == wall
    return isinstance(spec, AtLocal) and spec.local_time == wall


def _covering(facts: Facts) -> RunRecord | None:
    """The record that stands for the instant, if any."""
    record, instant = facts.record, facts.instant
    if record is None:
        return None
    if record.key.nominal_time == instant:
        return record
    end = record.range_end_time
    if end is None or not record.key.nominal_time < instant <= end:
        return None
    schedule = to_schedule((facts.record_version or facts.version).spec.schedule)
    if record.reason is RunReason.DST_GAP:
        return record if _gap_skip_at(schedule, instant) else None
    return record if _fires_at(schedule, instant) else None


class _Words:
    """Times and people as the answer's sentences write them."""

    def __init__(self, zone: str) -> None:
        self.zone = load_zone(zone)

    def at(self, instant: datetime) -> str:
        local = instant.astimezone(self.zone)
        utc = instant.astimezone(UTC)
        if local.utcoffset() == timedelta(0):
            return f"{utc:%Y-%m-%d %H:%M:%S}Z"
        return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname()} ({utc:%H:%M:%S}Z)"

    def wall(self, wall: datetime) -> str:
        return f"{wall:%Y-%m-%d %H:%M:%S}"

    @staticmethod
    def paused(pause: JobPause | None) -> str:
        if pause is None:
            return "The job is paused"
        by = ""
        if pause.by is not None:
            by = f" by {pause.by.description or f'token {pause.by.token_id}'}"
        note = f', noting "{pause.note}"' if pause.note else ""
        return f"The job was paused{by}{note}"

    def offset(self, offset: timedelta) -> str:
        minutes = int(offset.total_seconds()) // 60
        sign = "-" if minutes < 0 else "+"
        return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"

    def transition(self, note: DstNote) -> str:
        before = (note.at + note.offset_before).replace(tzinfo=None)
        after = (note.at + note.offset_after).replace(tzinfo=None)
        went = "forward" if note.kind is WallKind.GAP else "back"
        return (
            f"on {before:%Y-%m-%d} in {note.zone} the clocks went {went} from {before:%H:%M} "
            f"to {after:%H:%M} ({self.offset(note.offset_before)} to "
            f"{self.offset(note.offset_after)})"
        )


def _item(job_id: uuid.UUID, spec: JobSpec, instant: datetime) -> PreviewItem:
    return preview_item(spec.schedule, instant, (job_id, spec))


def _ran(run: RunRecord, words: _Words) -> str:
    attempts = run.attempts
    last = attempts[-1] if attempts else None
    match run.state:
        case RunState.QUEUED:
            text = (
                f"It was claimed and is queued for a worker, due at {words.at(run.effective_time)}."
            )
        case RunState.RUNNING:
            started = words.at(last.start_time) if last else "now"
            text = f"It is running: attempt {run.attempt} started at {started}."
        case RunState.RETRY_WAIT:
            error = f" ({last.error})" if last and last.error else ""
            due = words.at(run.next_attempt_time) if run.next_attempt_time else "soon"
            text = f"It ran: attempt {run.attempt} failed{error}; the next is due at {due}."
        case RunState.SUCCEEDED:
            ended = words.at(last.end_time) if last and last.end_time else "its end"
            text = f"It ran: attempt {run.attempt} succeeded at {ended}."
        case _:
            detail = f": {run.reason_detail}" if run.reason_detail else ""
            text = (
                f"It ran and failed: DEAD_LETTERED after {run.attempt} attempt(s) "
                f"({run.reason.value}{detail})."
            )
    if run.start_lateness is not None:
        text += f" Its first attempt started {rounded_span(run.start_lateness)} after its time."
    if run.quota_delay > timedelta(0):
        text += f" The team's quota held it back {rounded_span(run.quota_delay)}."
    return text


def _policy(misfire: MisfireSettings) -> str:
    match misfire.policy:
        case MisfirePolicy.RUN_ONCE:
            return (
                "under RUN_ONCE only the latest of a late stretch runs, and none if a later "
                "one is on time"
            )
        case MisfirePolicy.RUN_ALL:
            return (
                f"under RUN_ALL late occurrences are caught up only within "
                f"max_catch_up_runs ({misfire.max_catch_up_runs}) and max_catch_up_age "
                f"({rounded_span(misfire.max_catch_up_age)})"
            )
        case MisfirePolicy.SKIP:
            return "under SKIP no late occurrence runs"


def _range(run: RunRecord, words: _Words) -> str:
    if run.occurrence_count <= 1 or run.range_end_time is None:
        return ""
    return (
        f" One record stands for the {run.occurrence_count} occurrences from "
        f"{words.at(run.key.nominal_time)} to {words.at(run.range_end_time)}."
    )


def _skipped(run: RunRecord, spec: JobSpec) -> str:
    match run.reason:
        case RunReason.JOB_PAUSED:
            return "It was SKIPPED: the job was paused (recorded when it was resumed)."
        case RunReason.OVERLAP:
            return (
                f"It was SKIPPED by the overlap policy {spec.overlap.value}: an earlier run of "
                f"the job was still active."
            )
        case RunReason.DST_GAP:
            return (
                "It was SKIPPED: its local time fell in a spring-forward gap and the gap "
                "policy is SKIP."
            )
        case RunReason.JOB_UPDATED:
            return (
                "It was SKIPPED: the job's schedule was changed before it was claimed; the "
                "new schedule applies from the change."
            )
        case RunReason.CALENDAR:
            return (
                f"It was SKIPPED by calendar {run.reason_detail}: the calendar excluded its "
                "day when it was claimed."
            )
    detail = f": {run.reason_detail}" if run.reason_detail else ""
    return f"It was SKIPPED ({run.reason.value}{detail})."


def _from_record(
    job: JobRecord, run: RunRecord, instant: datetime, version: VersionAt, words: _Words
) -> Explanation:
    fate = _FATE_OF_STATE[run.state]
    spec = version.spec
    found = Explanation(
        fate, "", instant, version.version, occurrence=_item(job.job_id, spec, instant), run=run
    )
    match fate:
        case Fate.RAN:
            text = _ran(run, words)
        case Fate.HELD:
            why = run.reason_detail or "waiting for the earlier run to end (BUFFER_ONE)"
            text = f"It is held back before dispatch: {why}."
        case Fate.CANCELLED:
            if run.reason is RunReason.SUPERSEDED:
                text = "It was cancelled: a newer run replaced it under CANCEL_PREVIOUS."
            elif run.reason is RunReason.JOB_DELETED:
                text = "It was cancelled: the job was deleted."
            else:
                text = f"It was cancelled ({run.reason_detail or run.reason.value})."
        case Fate.MISSED:
            key = RunKey.scheduled(job.job_id, instant)
            late = run.update_time - effective_time(spec, key)
            text = (
                f"It was MISSED: it could not start within its misfire threshold "
                f"({rounded_span(spec.misfire.threshold)}); it was {rounded_span(late)} late "
                f"when the misfire policy judged it, and {_policy(spec.misfire)}."
            )
            found = dataclasses.replace(found, lateness=late, misfire=spec.misfire)
        case _:
            text = _skipped(run, spec)
    return dataclasses.replace(found, text=text + _range(run, words))


def _backfilled(
    job: JobRecord, run: RunRecord, instant: datetime, version: VersionAt, words: _Words
) -> Explanation:
    """An occurrence with no record of the schedule's that a backfill ran."""
    found = _from_record(job, run, instant, version, words)
    told = f"It was run by a backfill (request {run.key.backfill_request_id}), not on schedule."
    return dataclasses.replace(found, text=f"{told} {found.text}")


def _neighbours(
    job: JobRecord, version: VersionAt, instant: datetime, asked: str, words: _Words
) -> Explanation:
    schedule = to_schedule(version.spec.schedule)
    before = previous_fire_time(schedule, instant)
    after = next_fire_time(schedule, instant - _BEFORE)
    previous = _item(job.job_id, version.spec, before) if before else None
    following = _item(job.job_id, version.spec, after) if after else None
    nearest = [words.at(t) for t in (before, after) if t is not None]
    text = f"{asked} is not an occurrence of the job's schedule"
    text += " as in force then." if version.spec.schedule != job.spec.schedule else "."
    end = end_time_of(version.spec.schedule)
    if end is not None and instant > end:
        text += f" The schedule ended at its end_time, {words.at(end)}: nothing runs after it."
    if nearest:
        text += " The nearest: " + " and ".join(nearest) + "."
    return Explanation(
        Fate.NOT_AN_OCCURRENCE,
        text,
        instant,
        version.version,
        previous=previous,
        next=following,
    )


def _last_run_before(job: JobRecord, instant: datetime) -> datetime | None:
    """The schedule's last run, when max_runs ends it before ``instant`` (an occurrence of the
    series that comes after its end); None otherwise. For a job still running, the last run
    is counted on from its pending occurrence, up to MAX_PREVIEW occurrences ahead."""
    left = runs_left(job.spec, job.scheduled_runs)
    if left is None:
        return None
    if left == 0:
        last = job.last_scheduled_time
        return last if last is not None and last < instant else None
    pending = job.next_run_time
    if job.state is not JobState.ACTIVE or pending is None or left > MAX_PREVIEW:
        return None
    schedule = to_schedule(job.spec.schedule)
    cursor = pending - _BEFORE
    for _ in range(left):
        found = next_fire_time(schedule, cursor)
        if found is None or found >= instant:
            return None
        cursor = found
    return cursor


def _after_the_end(
    job: JobRecord, instant: datetime, last: datetime, version: VersionAt, asked: str, words: _Words
) -> Explanation:
    ended = runs_left(job.spec, job.scheduled_runs) == 0
    text = (
        f"{asked} comes after the schedule's end: with max_runs {job.spec.max_runs}, its last "
        f"run {'was' if ended else 'is'} the one at {words.at(last)}; nothing runs after it."
    )
    return Explanation(
        Fate.NOT_AN_OCCURRENCE,
        text,
        instant,
        version.version,
        previous=_item(job.job_id, version.spec, last),
    )


def _unrecorded(
    job: JobRecord, instant: datetime, version: VersionAt, now: datetime, words: _Words
) -> Explanation:
    """An occurrence of the schedule in force with no record."""
    item = _item(job.job_id, version.spec, instant)
    fate, text = (
        Fate.UNRECORDED,
        ("No record of it is kept: run history is retired after its retention period."),
    )
    pending = job.next_run_time
    if instant < job.create_time:
        text = f"The job did not exist yet: it was created at {words.at(job.create_time)}."
    elif job.state is JobState.ACTIVE and pending is not None and instant >= pending:
        fate = Fate.NOT_YET_DUE
        if instant == pending and instant <= now:
            text = "It is due and about to be claimed: the job's next run."
        elif instant == pending:
            text = (
                f"It is the job's next run, due at {words.at(job.next_effective_time or pending)}."
            )
        else:
            text = f"It is not due yet: the job's next run is at {words.at(pending)}."
    elif job.state is JobState.PAUSED and job.pause_time is not None and instant >= job.pause_time:
        if instant <= now:
            fate = Fate.SKIPPED
            text = (
                f"{words.paused(job.pause)}: it is skipped, recorded SKIPPED (JOB_PAUSED) "
                f"when the job is resumed."
            )
        else:
            fate = Fate.NOT_YET_DUE
            text = (
                f"It is not due yet. {words.paused(job.pause)}: it runs only if the job is "
                f"resumed before then."
            )
    elif job.state is JobState.ERROR:
        text = f"No run was made: the job is in ERROR ({job.state_reason})."
    return Explanation(fate, text, instant, version.version, occurrence=item)


def _gap_skip(job: JobRecord, instant: datetime, version: VersionAt, words: _Words) -> Explanation:
    text = (
        f"Its local time does not exist that night and the gap policy is SKIP: it does not "
        f"run (recorded SKIPPED, DST_GAP, at {words.at(instant)})."
    )
    return Explanation(
        Fate.SKIPPED,
        text,
        instant,
        version.version,
        occurrence=_item(job.job_id, version.spec, instant),
    )


def _one(job: JobRecord, reading: Reading, facts: Facts, now: datetime) -> Explanation:
    words = _Words(reading.zone)
    instant, version = facts.instant, facts.version
    spec = version.spec
    gap = reading.kind is WallKind.GAP
    asked = words.wall(reading.wall) if gap else words.at(instant)
    if gap and not _wall_fires(spec.schedule, reading.wall):
        return _neighbours(job, version, instant, asked, words)
    covering = _covering(facts)
    if covering is not None:
        found = _from_record(job, covering, instant, facts.record_version or version, words)
        if facts.backfill is None:
            return found
        again = facts.backfill
        text = (
            f" A backfill (request {again.key.backfill_request_id}) ran it again: that run is "
            f"{again.state.value}."
        )
        return dataclasses.replace(found, text=found.text + text)
    if facts.backfill is not None:
        return _backfilled(job, facts.backfill, instant, version, words)
    schedule = to_schedule(spec.schedule)
    if gap and _gap_skip_at(schedule, instant):
        return _gap_skip(job, instant, version, words)
    if not _fires_at(schedule, instant):
        return _neighbours(job, version, instant, asked, words)
    last = _last_run_before(job, instant)
    if last is not None:
        return _after_the_end(job, instant, last, version, asked, words)
    return _unrecorded(job, instant, version, now, words)


def _fold_policy(spec: ScheduleSpec) -> str:
    if not (isinstance(spec, Cron) and is_fixed_time(spec.expression)):
        return " This schedule follows elapsed time: both passes are occurrences."
    fold = (spec.fold or FoldPolicy.FIRST).value
    return f" Under the fold policy {fold} the job runs at {_PASSES[fold]}."


_PASSES = {"FIRST": "the first pass only", "LAST": "the second pass only", "BOTH": "both"}


def _dst_sentence(reading: Reading, found: Explanation, spec: ScheduleSpec, words: _Words) -> str:
    note = found.dst
    if note is None:
        return ""
    text = words.transition(note)
    if reading.kind is WallKind.GAP:
        text = f"{words.wall(reading.wall)} did not exist: {text}."
        if found.fate is Fate.NOT_AN_OCCURRENCE:
            return text + " The schedule has no occurrence in the gap."
        if isinstance(spec, Cron) and spec.gap is GapPolicy.SKIP:
            return text
        return (
            text + f" Under the gap policy SHIFT the occurrence moved to {words.at(found.instant)}."
        )
    if reading.kind is WallKind.FOLD:
        passes = [
            (reading.wall - offset).replace(tzinfo=UTC)
            for offset in (note.offset_before, note.offset_after)
        ]
        both = " and ".join(words.at(t) for t in passes)
        return f"{words.wall(reading.wall)} happened twice ({both}): {text}." + _fold_policy(spec)
    if found.occurrence is not None and found.occurrence.dst_adjustment is DstAdjustment.SHIFTED:
        return f"Its written time did not exist: {text}; it runs at the gap's end."
    return ""


def _occurrence_dst(found: Explanation, zone: str) -> DstNote | None:
    """The transition a shifted or fold occurrence met, in the schedule's zone."""
    item = found.occurrence
    if item is None or item.dst_adjustment is DstAdjustment.NONE:
        return None
    tz = load_zone(zone)
    instant = item.nominal_time
    if item.dst_adjustment is DstAdjustment.SHIFTED:
        return DstNote(
            WallKind.GAP,
            instant,
            offset_at(instant - timedelta(seconds=1), tz),
            offset_at(instant, tz),
            zone,
        )
    reading = read_wall(wall_clock(instant, tz), tz)
    return _note(WallKind.FOLD, reading.earlier, reading.later, tz, zone)


def explain(
    job: JobRecord,
    reading: Reading,
    facts: Sequence[Facts],
    now: datetime,
    calendars: Sequence[tuple[str, CalendarRules]] = (),
) -> Explanation:
    """The fate of the occurrence the time asked names: the first of its instants that is an
    occurrence (or has a record), else the first instant, no occurrence. One not yet due on a
    day one of the job's ``calendars`` (as they are now) excludes says so."""
    answers = [_one(job, reading, f, now) for f in facts]
    chosen = next((a for a in answers if a.fate is not Fate.NOT_AN_OCCURRENCE), answers[0])
    by = excluded_by(calendars, chosen.instant) if chosen.fate is Fate.NOT_YET_DUE else None
    if by is not None:
        text = (
            f" Calendar {by} excludes its day: unless that changes before it is claimed, it "
            "will be recorded SKIPPED (CALENDAR), not run."
        )
        chosen = dataclasses.replace(chosen, text=chosen.text + text)
    its = next(f for f in facts if f.instant == chosen.instant)
    spec = (its.record_version or its.version).spec.schedule
    note = reading.dst or _occurrence_dst(chosen, zone_of(spec))
    chosen = dataclasses.replace(chosen, dst=note)
    words = _Words(reading.zone)
    sentence = _dst_sentence(reading, chosen, spec, words)
    if not sentence:
        return chosen
    return dataclasses.replace(chosen, text=f"{sentence} {chosen.text}")
