"""Following a run until it ends: QUEUED -> RUNNING -> SUCCEEDED, shown as it happens.

The API has no watch call, so the run is read again every POLL_SECONDS. What it went through
is told from its attempts, which only grow, so a state that lasted less than a poll (a quick
RUNNING) is still shown. A run held WAITING (its team's quota, its turn of dispatch, an earlier
run) is shown as each read finds it, with what it waits for.
"""

from __future__ import annotations

import time

from rich.status import Status

from duetime.jobs.v1 import job_service_pb2, run_pb2
from duetime_cli.exits import ExitCode, Interrupted
from duetime_cli.failures import Failure
from duetime_cli.output import stderr
from duetime_cli.session import Session
from duetime_client.describe import NONE, enum_name, reason

POLL_SECONDS = 0.3
FINAL = frozenset(
    {
        run_pb2.RUN_STATE_SUCCEEDED,
        run_pb2.RUN_STATE_DEAD_LETTERED,
        run_pb2.RUN_STATE_MISSED,
        run_pb2.RUN_STATE_SKIPPED,
        run_pb2.RUN_STATE_CANCELLED,
    }
)


def state_name(run: run_pb2.Run) -> str:
    return enum_name(run_pb2.RunState, run.state, "RUN_STATE_")


def milestones(run: run_pb2.Run) -> list[str]:
    """What the run went through so far, oldest first; a later read only adds lines. A run
    still WAITING for its first dispatch has none yet."""
    held = run.state == run_pb2.RUN_STATE_WAITING and not run.attempts
    lines = [] if held else ["QUEUED"]
    for attempt in run.attempts:
        lines.append(f"RUNNING attempt {attempt.number} on {attempt.worker or 'a worker'}")
        if attempt.outcome:
            outcome = enum_name(run_pb2.AttemptOutcome, attempt.outcome, "ATTEMPT_OUTCOME_")
            lines.append(f"attempt {attempt.number} {outcome}" + _suffix(attempt.error))
    if run.state in FINAL:
        reason = enum_name(run_pb2.RunReason, run.reason, "RUN_REASON_") if run.reason else ""
        lines.append(state_name(run) + _suffix(run.reason_detail or reason))
    return lines


def waiting(run: run_pb2.Run) -> str:
    """What a WAITING run waits for (``WAITING QUOTA: max_running``); "" for any other run."""
    if run.state != run_pb2.RUN_STATE_WAITING:
        return ""
    why = reason(run, brief=True)
    return "WAITING" if why == NONE else f"WAITING {why}"


def _suffix(text: str) -> str:
    return f": {text}" if text else ""


def follow(session: Session, run: run_pb2.Run, timeout: float) -> run_pb2.Run:
    """Reads the run until it is final (or ``timeout`` seconds pass, if not 0), printing each
    milestone on stderr under a live status line; returns the final run."""
    stderr.print(f"following {run.name}", soft_wrap=True)
    try:
        with stderr.status("", spinner="dots") as status:
            return _poll(session, run, timeout, status)
    except Interrupted:
        raise _stopped(run.name, ExitCode.INTERRUPTED, "CANCELLED", "stopped following") from None


def _poll(session: Session, run: run_pb2.Run, timeout: float, status: Status) -> run_pb2.Run:
    began = time.monotonic()
    shown, waited = 0, ""
    while True:
        elapsed = time.monotonic() - began
        lines = milestones(run)
        new, shown = lines[shown:], len(lines)
        now_waiting = waiting(run)
        if now_waiting and now_waiting != waited:  # a wait is told once, as it is first seen
            new.append(now_waiting)
        waited = now_waiting
        for line in new:
            stderr.print(f"  {elapsed:6.1f}s  {line}", soft_wrap=True)
        if run.state in FINAL:
            return run
        if timeout and elapsed >= timeout:
            what = f"stopped waiting after {timeout:g}s with the run {state_name(run)}"
            raise _stopped(run.name, ExitCode.UNAVAILABLE, "DEADLINE_EXCEEDED", what)
        status.update(f"{state_name(run)}, attempt {run.attempt}, {elapsed:.1f}s")
        time.sleep(POLL_SECONDS)
        run = session.call(session.jobs.GetRun, job_service_pb2.GetRunRequest(name=run.name)).run


def _stopped(name: str, exit_code: ExitCode, code: str, what: str) -> Failure:
    return Failure.local(exit_code, code, f"{what}; it goes on: duetime runs get {name}")
