"""A run's life as a timeline: when it was due, what held it (jitter, its team's quota, its
turn of dispatch capacity), each attempt's start, worker, end and outcome, a lease running
out, the wait before a retry, and where it ended; and the same as bars on one time axis (a
waterfall), for the run page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from duetime.jobs.v1 import run_pb2
from duetime_client import describe
from duetime_console import text
from duetime_console.times import instant

_HELD = {run_pb2.RUN_REASON_QUOTA: "its team's quota", run_pb2.RUN_REASON_FAIR_SHARE: "fair share"}


@dataclass(frozen=True)
class Event:
    time: datetime
    title: str
    detail: str = ""
    tone: str = "dim"


@dataclass(frozen=True)
class Bar:
    """A span on the waterfall, as percentages of the axis."""

    label: str
    start: float
    width: float
    tone: str


def _time(message: object, name: str) -> datetime | None:
    assert hasattr(message, "HasField")
    return instant(getattr(message, name)) if message.HasField(name) else None


def _hold(run: run_pb2.Run) -> tuple[str, bool]:
    """What held the run before dispatch, and whether it still does."""
    waiting = run.state == run_pb2.RUN_STATE_WAITING
    if run.reason in _HELD and waiting:
        limit = describe.quota_limit(run)
        what = _HELD[run.reason] + (f" ({limit})" if run.reason == run_pb2.RUN_REASON_QUOTA else "")
        return what, True
    if run.quota_limit:
        return f"its team's quota ({describe.quota_limit(run)})", False
    return "", False


def events(run: run_pb2.Run, now: datetime) -> list[Event]:
    """The run's events, in time order."""
    found: list[Event] = []
    nominal, effective = _time(run, "nominal_time"), _time(run, "effective_time")
    origin = text.run_origin(run)
    if nominal is not None:
        title = {"TRIGGER": "Triggered", "BACKFILL": "Backfilled occurrence"}.get(
            origin, "Scheduled for"
        )
        found.append(Event(nominal, title, f"origin {origin}", "info"))
    if effective is not None and nominal is not None and effective > nominal:
        found.append(Event(effective, "May start", f"jitter {describe.span(effective - nominal)}"))
    held, still = _hold(run)
    eligible = _time(run, "eligible_time")
    if held and still:
        found.append(Event(effective or nominal or now, f"Held by {held}", "still waiting", "warn"))
    elif held and eligible is not None:
        delay = describe.duration(run, "quota_delay")
        found.append(Event(eligible, f"Released by {held}", f"held {delay}", "warn"))
    for attempt in run.attempts:
        found.extend(_attempt_events(attempt))
    retry = _time(run, "next_attempt_time")
    if retry is not None:
        found.append(Event(retry, "Next attempt due", "waiting to retry", "warn"))
    state = text.run_state(run)
    updated = _time(run, "update_time")
    if state in ("SUCCEEDED", "DEAD_LETTERED", "MISSED", "SKIPPED", "CANCELLED") and updated:
        found.append(Event(updated, f"Ended {state}", text.reason(run), text.tone(state)))
    return sorted(found, key=lambda event: event.time)


def _attempt_events(attempt: run_pb2.Attempt) -> list[Event]:
    out: list[Event] = []
    worker = f"on {attempt.worker}" if attempt.worker else ""
    started, ended = _time(attempt, "start_time"), _time(attempt, "end_time")
    if started is not None:
        out.append(Event(started, f"Attempt {attempt.number} started", worker, "info"))
    outcome = text.outcome(attempt)
    if ended is not None:
        took = describe.span(ended - started) if started is not None else ""
        detail = " · ".join(p for p in (f"after {took}" if took else "", attempt.error) if p)
        if outcome == "LEASE_EXPIRED":
            detail = "its worker stopped renewing its lease" + (f" · {detail}" if detail else "")
        out.append(Event(ended, f"Attempt {attempt.number} {outcome}", detail, text.tone(outcome)))
    else:
        lease = _time(attempt, "lease_expire_time")
        if lease is not None:
            out.append(Event(lease, f"Attempt {attempt.number}'s lease expires", "unless renewed"))
    return out


def bars(run: run_pb2.Run, now: datetime) -> list[Bar]:
    """The hold and each attempt as spans on one axis, from the run's due time to its last
    event (or now, for a run still going)."""
    start = _time(run, "effective_time") or _time(run, "nominal_time")
    if start is None:
        return []
    spans: list[tuple[str, datetime, datetime, str]] = []
    held, still = _hold(run)
    eligible = _time(run, "eligible_time")
    if held and (still or eligible is not None):
        spans.append((f"held by {held}", start, now if still else eligible or start, "warn"))
    for attempt in run.attempts:
        began = _time(attempt, "start_time")
        if began is None:
            continue
        ended = _time(attempt, "end_time")
        outcome = text.outcome(attempt)
        spans.append(
            (f"attempt {attempt.number}: {outcome}", began, ended or now, text.tone(outcome))
        )
    if not spans:
        return []
    first = min(start, *(s[1] for s in spans))
    last = max(s[2] for s in spans)
    total = max(last - first, timedelta(milliseconds=1))
    return [
        Bar(
            label,
            100 * ((begin - first) / total),
            max(100 * ((end - begin) / total), 0.5),
            tone,
        )
        for label, begin, end, tone in spans
    ]
