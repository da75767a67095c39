"""Reports of how attempts ended: load the facts of a batch of reports, let
``duetime_core.attempts`` decide, write the answers; a single report is a batch of one.

The compare-and-set of a report: only the run's open attempt, held by the reporting worker, may
write; anything else is ABORTED STALE_ATTEMPT and changes nothing. A pass tries (SKIP LOCKED:
a run or job another transaction holds, or a run named twice, is left out) or waits (one
report, blocking locks in the usual order), as a start's pass does (``starts``). Successes
close in one statement; another outcome is decided run by run (retry, hand-back,
dead-letter), with the job's lock the pass holds.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from duetime_core.attempts import EndFacts, RunOutcome, decide_completion, truncate_error
from duetime_core.errors import DuetimeError
from duetime_core.jobspec import JobState
from duetime_core.records import AttemptOutcome, RunState
from duetime_infra.pg.attempts.outcome import (
    LockedJob,
    apply_run_outcome,
    count_first_start,
    lock_jobs,
    lock_runs,
    release_waiting,
    stale_attempt,
    transaction,
)
from duetime_infra.pg.attempts.results import CompleteResult, Pool, Rand, Report
from duetime_infra.pg.dispatch.outbox_writer import insert_outbox
from duetime_infra.pg.dispatch.spec_cache import SpecCache
from duetime_infra.pg.pool import Conn, generic_plans
from duetime_infra.pg.sql import q
from duetime_infra.telemetry import instruments

log = logging.getLogger(__name__)


class ReportedRun(NamedTuple):
    """The run of a report, as ``attempt_batch_reports_lock`` locks it: its row, its open
    attempt's worker, the database's now and, for a report other than a success only, its
    definition's text, target kind and overlap policy."""

    run_id: uuid.UUID
    nominal_time: datetime
    job_id: uuid.UUID
    job_version: int
    origin: str
    team_id: str
    state: str
    attempt: int
    attempt_limit: int
    budget_start_attempt: int
    priority: str
    effective_time: datetime
    eligible_time: datetime | None
    traceparent: str
    trace_context: bytes | None
    open_worker_id: str | None
    spec_text: str | None
    target_kind: str | None
    job_overlap: str | None
    now: datetime


# A report that passed the compare-and-set: its index and its run's locked row.
_Closing = tuple[int, ReportedRun]
# A closed report, for what is counted after COMMIT: its index, run row, outcome, and the
# start of its call when it was a first attempt started ahead of its time.
_Closed = tuple[int, ReportedRun, RunOutcome, datetime | None]

SUCCEEDED = RunOutcome(RunState.SUCCEEDED)


def fence(report: Report, row: ReportedRun) -> DuetimeError | None:
    """The compare-and-set's check on the run's locked row: None when attempt ``report.attempt``
    is its open attempt and the reporting worker holds it."""
    token = report.attempt
    if row.state != RunState.RUNNING.value or row.attempt != token:
        return stale_attempt(
            f"attempt {token} is not the run's open attempt (run {row.state}, "
            f"latest attempt {row.attempt})"
        )
    if row.open_worker_id != report.worker_id:
        return stale_attempt(f"attempt {token} is not held by worker {report.worker_id!r}")
    return None


def _record(report: Report, closed: _Closed) -> None:
    """After COMMIT: a reported attempt's end, counted (and logged, unless a success: a
    herd's successes are counted only); the runs it finished are counted by the caller, once
    a state and reason."""
    _, row, result, first_call = closed
    if report.outcome is not AttemptOutcome.SUCCEEDED:
        log.info(
            "attempt completed",
            extra={
                "action": "attempt_completed",
                "run_id": str(report.run_id),
                "attempt": report.attempt,
                "outcome": report.outcome.value,
                "run_state": result.state.value,
                "reason": result.reason.value,
            },
        )
    instruments.attempt_closed(report.outcome.value, "worker")
    if first_call is not None:
        count_first_start(row, first_call)


class Reports:
    def __init__(self, pool: Pool, specs: SpecCache, rand: Rand) -> None:
        self._pool = pool
        self._specs = specs
        self._rand = rand

    async def run(
        self, reports: Sequence[Report], wait: bool
    ) -> dict[int, CompleteResult | DuetimeError]:
        """The answers of one pass by report index (see the module's doc for ``wait``)."""
        answers: dict[int, CompleteResult | DuetimeError] = {}
        closed: list[_Closed] = []
        async with transaction(self._pool) as conn:
            await generic_plans(conn)
            closing = await self._fenced(conn, reports, answers, wait)
            alone = dict.fromkeys((row.job_id for _, row in closing), False)
            jobs = await lock_jobs(conn, alone, wait)
            if not wait:  # a job held elsewhere: a waiting pass
                closing = [(i, row) for i, row in closing if row.job_id in jobs]
            if closing:
                # A success ends the run SUCCEEDED whatever else holds (a cancel asked for, the
                # job deleted); the job's lock orders it with the release of a WAITING run.
                now = max(j.now for j in jobs.values()) if jobs else closing[0][1].now
                succeeded = [
                    c for c in closing if reports[c[0]].outcome is AttemptOutcome.SUCCEEDED
                ]
                closed += await self._close_succeeded(conn, reports, succeeded, now)
                for i, row in closing:
                    if reports[i].outcome is not AttemptOutcome.SUCCEEDED:
                        job = jobs.get(row.job_id)
                        result, first_call = await self._end(conn, row, job, reports[i], now)
                        closed.append((i, row, result, first_call))
        finished: Counter[tuple[str, str]] = Counter()
        for entry in closed:
            i, _, result, _ = entry
            answers[i] = CompleteResult(result.state, result.next_attempt_time)
            _record(reports[i], entry)
            if result.final:
                finished[result.state.value, result.reason.value] += 1
        for (state, reason), count in finished.items():
            instruments.runs_finished(state, reason, count)
        return answers

    async def _fenced(
        self,
        conn: Conn,
        reports: Sequence[Report],
        answers: dict[int, CompleteResult | DuetimeError],
        wait: bool,
    ) -> list[_Closing]:
        """The reports whose run the pass locked and whose attempt is the run's open one; a
        stale one is answered ABORTED STALE_ATTEMPT. A run named twice is left to waiting
        passes; only a report other than a success reads its run's definition."""
        rows = await lock_runs(
            conn,
            "attempt_batch_reports_lock",
            ReportedRun,
            [r.run_id for r in reports],
            wait,
            [r.run_id for r in reports if r.outcome is not AttemptOutcome.SUCCEEDED],
        )
        by_run = {row.run_id: row for row in rows}
        named = Counter(r.run_id for r in reports)
        closing: list[_Closing] = []
        for i, report in enumerate(reports):
            row = by_run.get(report.run_id)
            if named[report.run_id] > 1 or (row is None and not wait):
                continue
            if row is None:  # a waiting pass's: the run is gone
                answers[i] = stale_attempt("no such run")
                continue
            refused = fence(report, row)
            if refused is not None:
                answers[i] = refused
                continue
            closing.append((i, row))
        return closing

    @staticmethod
    async def _close_succeeded(
        conn: Conn, reports: Sequence[Report], succeeded: Sequence[_Closing], now: datetime
    ) -> list[_Closed]:
        """Closes the successes in one statement, then lets go the WAITING runs of their jobs."""
        if not succeeded:
            return []
        done = await conn.fetch(
            q("attempt_batch_close_succeeded"),
            [row.run_id for _, row in succeeded],
            [row.nominal_time for _, row in succeeded],
            [row.attempt for _, row in succeeded],
            now,
            [reports[i].call_time for i, _ in succeeded],
            [call.value if (call := reports[i].call) is not None else None for i, _ in succeeded],
        )
        if len(done) != len(succeeded):  # the runs are locked and RUNNING: cannot happen
            raise RuntimeError("a locked running run did not close")
        ended_jobs = list({row.job_id for _, row in succeeded})
        for job in await conn.fetch(q("attempt_batch_jobs_waiting"), ended_jobs):
            await insert_outbox(conn, await release_waiting(conn, job["job_id"]))
        began = {d["run_id"]: d["start_time"] for d in done if d["first_early"]}
        return [(i, row, SUCCEEDED, began.get(row.run_id)) for i, row in succeeded]

    async def _end(
        self, conn: Conn, row: ReportedRun, job: LockedJob | None, report: Report, now: datetime
    ) -> tuple[RunOutcome, datetime | None]:
        """Closes the attempt of a report other than a success and moves its run on: retried,
        handed back, dead-lettered or cancelled, as ``decide_completion`` says."""
        token, outcome = report.attempt, report.outcome
        error = truncate_error(report.error)
        closed = await conn.fetchrow(
            q("attempt_close"),
            row.run_id,
            row.nominal_time,
            token,
            outcome.value,
            error,
            now,
            report.call_time,
            report.call.value if report.call is not None else None,
            outcome is not AttemptOutcome.HANDED_BACK,  # it ran: its call began its run
        )
        if closed is None:  # the run row is locked and RUNNING: this cannot happen
            raise RuntimeError(f"attempt {token} of run {row.run_id} did not close")
        first_call: datetime | None = closed["start_time"] if closed["first_early"] else None
        facts = await self._end_facts(conn, row, job, closed["cancel_reason"], report)
        result = decide_completion(outcome, report.retryable, error, facts, now, self._rand())
        await apply_run_outcome(conn, row, token, result, now)
        return result, first_call

    async def _end_facts(
        self,
        conn: Conn,
        row: ReportedRun,
        job: LockedJob | None,
        cancel_reason: str,
        report: Report,
    ) -> EndFacts:
        """What the end of the attempt is decided on: its run's definition and budget, its job
        (None: gone), the cancel asked of the attempt just closed and, for a hand-back, how
        many of the run's attempts were handed back."""
        hand_backs = 0
        if report.outcome is AttemptOutcome.HANDED_BACK:  # rare: a worker stopping
            hand_backs = await conn.fetchval(
                q("attempt_run_hand_backs"),
                row.run_id,
                row.nominal_time,
                report.attempt,
                row.budget_start_attempt,
            )
        assert row.spec_text is not None  # read for every report other than a success
        snapshot = self._specs.get(row.job_id, row.job_version, row.spec_text)
        return EndFacts(
            attempt=report.attempt,
            attempt_limit=row.attempt_limit,
            retry=snapshot.retry,
            cancel_reason=cancel_reason,
            job_deleted=job is None or job.state == JobState.DELETED.value,
            hand_backs=hand_backs,
            delivery=snapshot.delivery,
            call=report.call,
        )
