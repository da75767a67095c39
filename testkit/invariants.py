"""What must hold of runs, attempts and the target's calls however the system was treated: the
checks shared by the load tests and the fault-injection soak (``bench.chaos``).

Each check returns the violations it found, as readable lines naming the run, so a soak can
report every one of them; ``assert_none`` turns them into a test failure.
"""

from __future__ import annotations

import itertools
import uuid
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import asyncpg

from duetime_core.runkey import RunKey
from duetime_infra.pg.pool import Conn

# The target's receive time and the attempts' times come from two clocks of this machine (the
# host's and PostgreSQL's), read at microsecond resolution.
CLOCK_SLACK = timedelta(milliseconds=5)
UNSETTLED = ("QUEUED", "WAITING", "RUNNING", "RETRY_WAIT")


@dataclass(frozen=True)
class TargetCall:
    """One call as the target saw it."""

    key: str  # Idempotency-Key
    attempt: int  # Duetime-Attempt
    arrived: datetime  # UTC, the host's clock


@dataclass(frozen=True)
class Records:
    """The runs and their attempts by run; apart, the runs a pause SKIPPED before any attempt
    (claimed ahead of the pause)."""

    runs: list[asyncpg.Record]
    attempts: dict[uuid.UUID, list[asyncpg.Record]]
    paused: list[asyncpg.Record]

    def every_paused_apart(self) -> Records:
        """Every run a pause SKIPPED set apart, whatever attempts it had: where a pause can
        only end runs that never called (no faults, no failures; an attempt started ahead of
        its time is given back)."""
        paused = [r for r in self.runs if _paused(r)]
        kept = [r for r in self.runs if not _paused(r)]
        return Records(kept, self.attempts, self.paused + paused)

    @staticmethod
    def key(run: asyncpg.Record) -> str:
        return RunKey.scheduled(run["job_id"], run["nominal_time"]).canonical()


async def read_records(conn: Conn) -> Records:
    every = await conn.fetch(
        "SELECT run_id, job_id, nominal_time, state, reason, attempt FROM runs"
    )
    attempts = await conn.fetch(
        "SELECT run_id, number, worker_id, start_time, end_time, lease_expire_time, outcome, "
        "early "
        "FROM run_attempts ORDER BY run_id, number"
    )
    by_run: dict[uuid.UUID, list[asyncpg.Record]] = defaultdict(list)
    for a in attempts:
        by_run[a["run_id"]].append(a)
    paused = [r for r in every if _paused(r) and not r["attempt"]]
    runs = [r for r in every if not (_paused(r) and not r["attempt"])]
    return Records(runs, by_run, paused)


def _paused(run: asyncpg.Record) -> bool:
    return bool(run["state"] == "SKIPPED" and run["reason"] == "JOB_PAUSED")


def attempt_violations(records: Records) -> list[str]:
    """Per run: attempts numbered 1..n, every one closed, never two overlapping, at most one
    SUCCEEDED and only the last, and the run SUCCEEDED exactly when its last attempt did (a
    report refused as stale changes nothing, so an accepted one shows as an overlap or as an
    outcome after a later attempt's start)."""
    found: list[str] = []
    for run in records.runs:
        mine = records.attempts.get(run["run_id"], [])
        where = f"run {run['run_id']} ({run['state']})"
        if [a["number"] for a in mine] != list(range(1, run["attempt"] + 1)):
            found.append(
                f"{where}: attempts {[a['number'] for a in mine]}, run says {run['attempt']}"
            )
        if any(a["end_time"] is None for a in mine):
            found.append(f"{where}: an attempt left open")
            continue
        outcomes = [a["outcome"] for a in mine]
        if "SUCCEEDED" in outcomes[:-1] or outcomes.count("SUCCEEDED") > 1:
            found.append(f"{where}: outcomes {outcomes}")
        if (run["state"] == "SUCCEEDED") != (outcomes[-1:] == ["SUCCEEDED"]):
            found.append(f"{where}: outcomes {outcomes}")
        for before, after in itertools.pairwise(mine):
            if before["end_time"] > after["start_time"]:
                found.append(
                    f"{where}: attempt {before['number']} ended {before['end_time']} after "
                    f"attempt {after['number']} started {after['start_time']}"
                )
    return found


def call_violations(
    records: Records,
    calls: Iterable[TargetCall],
    *,
    uncalled_ok: Collection[str] = ("HANDED_BACK",),
) -> list[str]:
    """Every call belongs to an attempt of a run that exists, arrived inside that attempt's
    lifetime (never before its start, never after it was closed), and no attempt called twice;
    an attempt that made no call ended with an outcome of ``uncalled_ok``."""
    by_key: dict[str, list[TargetCall]] = defaultdict(list)
    for call in calls:
        by_key[call.key].append(call)
    found: list[str] = []
    for run in records.runs:
        key = records.key(run)
        made = by_key.pop(key, [])
        numbered = {a["number"]: a for a in records.attempts.get(run["run_id"], [])}
        numbers = [c.attempt for c in made]
        if len(set(numbers)) < len(numbers):
            found.append(f"{key}: one attempt called the target twice: {sorted(numbers)}")
        for call in made:
            attempt = numbered.get(call.attempt)
            if attempt is None:
                found.append(f"{key}: a call of attempt {call.attempt}, which does not exist")
            elif attempt["start_time"] is not None and call.arrived < (
                attempt["start_time"] - CLOCK_SLACK
            ):
                found.append(f"{key}: attempt {call.attempt} called before it started")
            elif attempt["end_time"] is not None and call.arrived > (
                attempt["end_time"] + CLOCK_SLACK
            ):
                found.append(
                    f"{key}: attempt {call.attempt} ({attempt['outcome']}, worker "
                    f"{attempt['worker_id']}) called at {call.arrived}, "
                    f"{(call.arrived - attempt['end_time']).total_seconds():.3f} s after it "
                    "was closed"
                )
        uncalled = [
            a for n, a in numbered.items() if n not in set(numbers) and a["outcome"] is not None
        ]
        found += [
            f"{key}: attempt {a['number']} ended {a['outcome']} without a call"
            for a in uncalled
            if a["outcome"] not in uncalled_ok
        ]
    paused = {records.key(r): r for r in records.paused}
    for key, made in list(by_key.items())[:20]:
        skipped = paused.get(key)
        if skipped is None:
            found.append(f"{key}: calls for a run that does not exist")
        else:
            attempts = [
                (a["number"], a["outcome"], a["start_time"], a["end_time"])
                for a in records.attempts.get(skipped["run_id"], [])
            ]
            found.append(
                f"{key}: calls {[(c.attempt, str(c.arrived)) for c in made]} for run "
                f"{skipped['run_id']}, SKIPPED (JOB_PAUSED), attempts {attempts}"
            )
    return found


def assert_none(violations: Sequence[str], what: str = "invariants broken") -> None:
    assert not violations, f"{what} ({len(violations)}):\n" + "\n".join(violations[:20])
