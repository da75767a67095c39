"""StartAttempts and CompleteAttempts on PostgreSQL: many runs in one transaction.

The top-of-the-hour herd makes thousands of runs due in one second; one transaction per start
(six round trips each) cannot start them within the promise on one database. A batch takes the
same decisions as the one-run path (``duetime_core.attempts``), with one statement per step for
all its runs. Its row locks are taken with SKIP LOCKED only, so it never waits and cannot
deadlock; whatever it cannot decide alone — a run or job another transaction holds, two runs of
one job in the batch (unless all are under OVERLAP_POLICY_ALLOW), a misfire check, a refusal
that changes the run, a CANCEL_PREVIOUS, a report other than success — goes through
``AttemptStore``'s one-run path after the batch commits, which gives exactly the answer a single
call would. A batch transaction that fails as a whole (a statement timeout, a serialization
failure) decides nothing: every entry then goes through the one-run path, so one slow statement
does not fail hundreds of runs at once.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from duetime_core.attempts import (
    CallProgress,
    JobView,
    OverlapView,
    StartKind,
    StartView,
    check_admission,
    decide_start,
    misfire_check_needed,
    shares_job_lock,
)
from duetime_core.errors import DuetimeError, Unavailable
from duetime_core.jobspec import JobSpec, JobState, OverlapPolicy
from duetime_core.records import AttemptOutcome, RunState
from duetime_infra.pg.attempts.store import (
    AttemptStore,
    CompleteResult,
    Row,
    StartAnswer,
    StartResult,
    count_first_start,
    other_run,
    release_waiting,
    start_view,
    transaction,
)
from duetime_infra.pg.dispatch.outbox_writer import insert_outbox
from duetime_infra.pg.dispatch.spec_cache import SpecCache
from duetime_infra.pg.pool import Conn, generic_plans
from duetime_infra.pg.sql import q
from duetime_infra.telemetry import instruments

log = logging.getLogger(__name__)

MAX_BATCH = 1000
# One-run fallbacks of a batch run side by side, each on its own connection.
FALLBACK_CONCURRENCY = 4

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class StartRequest:
    run_id: uuid.UUID
    delivery_id: str
    worker_id: str
    # The worker can hold an attempt started ahead of its run's time.
    early: bool = False


@dataclass(frozen=True)
class Report:
    run_id: uuid.UUID
    attempt: int
    worker_id: str
    outcome: AttemptOutcome
    retryable: bool
    error: str
    # When the call began (the start of an attempt started ahead of its time).
    call_time: datetime | None = None
    call: CallProgress | None = None


# A start the admission check let through: its request's index, run row, definition, view.
_Admitted = tuple[int, Row, JobSpec, StartView]
# A start decided on: its request's index, run row, definition and call time (None: now).
_Starting = tuple[int, Row, JobSpec, datetime | None]


def _decided_in_batch(admitted: Sequence[_Admitted]) -> list[_Admitted]:
    """The admitted starts the batch decides: of a job whose runs here are all under
    OVERLAP_POLICY_ALLOW, every one (no run of the job changes what another's start decides:
    a herd's or a backfill's many runs of one job start together); of any other job, its
    earliest. Its later runs go through the one-run path after commit and see it started, as
    they would have one by one (with BUFFER_ONE or CANCEL_PREVIOUS a later run started first
    would hold back or supersede an earlier one)."""
    by_job: dict[uuid.UUID, list[_Admitted]] = {}
    for entry in sorted(admitted, key=lambda entry: entry[1]["nominal_time"]):
        by_job.setdefault(entry[1]["job_id"], []).append(entry)
    deciding: list[_Admitted] = []
    for entries in by_job.values():
        if all(view.overlap is OverlapPolicy.ALLOW for _, _, _, view in entries):
            deciding += entries
        else:
            deciding.append(entries[0])
    return deciding


async def _lock_jobs(conn: Conn, shared: Mapping[uuid.UUID, bool]) -> dict[uuid.UUID, Row]:
    """The jobs whose lock the batch took without waiting, shared or alone as ``shared``
    says of each (``shares_job_lock``); the others are held elsewhere, or gone."""
    rows = await conn.fetch(q("attempt_batch_jobs_lock"), list(shared), list(shared.values()))
    return {row["job_id"]: row for row in rows}


class BatchAttempts:
    def __init__(self, store: AttemptStore, specs: SpecCache | None = None) -> None:
        self._store = store
        # The scheduler shares its claimer's: the runs a herd starts were claimed seconds ago,
        # their definitions decoded then.
        self._specs = specs or SpecCache()

    async def start_many(
        self, requests: Sequence[StartRequest]
    ) -> list[StartResult | DuetimeError]:
        """One answer per request, in order: what ``AttemptStore.start`` would answer."""
        answers = await self._whole_batch(self._start_batch, requests, "start")
        return await self._fill(
            requests,
            answers,
            lambda r: self._store.start(r.run_id, r.delivery_id, r.worker_id, r.early),
        )

    async def _start_batch(self, requests: Sequence[StartRequest]) -> dict[int, StartResult]:
        """The starts the batch can decide alone (see the module's doc); the rest is left out."""
        answers: dict[int, StartResult] = {}
        starting: list[_Starting] = []
        async with transaction(self._store.pool) as conn:
            await generic_plans(conn)
            rows = await conn.fetch(q("attempt_batch_runs_lock"), [r.run_id for r in requests])
            replays: list[_Admitted] = []
            admitted = self._admit(requests, rows, answers, replays)
            if replays:
                leases = await self._store.renew_replayed(conn, [row for _, row, _, _ in replays])
                for i, row, spec, _ in replays:
                    answers[i] = self._store.replayed_result(row, spec, leases)
            deciding = _decided_in_batch(admitted)
            if deciding:
                starting = await self._decide(conn, requests, deciding, answers)
            if starting:
                await self._insert_started(conn, requests, starting, answers)
        for i, row, _, call_time in starting:
            # An attempt started ahead of its time is counted when its call's start is reported.
            if answers[i].attempt == 1 and call_time is None:
                count_first_start(row, answers[i].server_time)
        return answers

    def _admit(
        self,
        requests: Sequence[StartRequest],
        rows: Sequence[Row],
        answers: dict[int, StartResult],
        replays: list[_Admitted],
    ) -> list[_Admitted]:
        """The admission check of each start whose run row the batch locked: the answers it
        gives at once (too early, a refusal that leaves the run as it is) go into ``answers``,
        repeated starts into ``replays``; the starts it admits are returned, each with its
        definition and view, built once (a herd's batch is hundreds of runs)."""
        by_run = {row["run_id"]: row for row in rows}
        named = Counter(r.run_id for r in requests)
        admitted: list[_Admitted] = []
        for i, request in enumerate(requests):
            row = by_run.get(request.run_id)
            # Not found or held elsewhere; or named twice: the one-run path decides.
            if row is None or named[request.run_id] > 1:
                continue
            spec = self._spec(row)
            view = start_view(row, spec)
            answered = check_admission(
                view,
                row["now"],
                request.delivery_id,
                request.worker_id,
                early=self._store.early_window(request.early),
            )
            if answered is None:
                admitted.append((i, row, spec, view))
            elif answered.kind is StartKind.REPLAY:
                replays.append((i, row, spec, view))
            elif answered.kind is StartKind.TOO_EARLY:
                answers[i] = StartResult(
                    StartAnswer.TOO_EARLY, row["now"], effective_time=answered.until
                )
            elif answered.new_state is None:
                answers[i] = StartResult.refused(
                    row["now"], answered.refusal, row["effective_time"]
                )
        return admitted

    async def _decide(
        self,
        conn: Conn,
        requests: Sequence[StartRequest],
        deciding: Sequence[_Admitted],
        answers: dict[int, StartResult],
    ) -> list[_Starting]:
        """The start decision of each admitted run under its job's lock (SKIP LOCKED: a job
        held elsewhere is left to the one-run path), with the job's other runs for the overlap
        check: refusals that leave the run as it is go into ``answers``; the runs to start are
        returned, each with its call time (None: now)."""
        settings = self._store.settings
        shared: dict[uuid.UUID, bool] = {}
        for _, row, _, view in deciding:
            shared[row["job_id"]] = shared.get(row["job_id"], True) and shares_job_lock(view)
        jobs = await _lock_jobs(conn, shared)
        others: dict[uuid.UUID, list[Row]] = {}
        # Other runs of the job decide nothing under OVERLAP_POLICY_ALLOW.
        overlapping = [
            row["job_id"]
            for _, row, _, view in deciding
            if view.overlap is not OverlapPolicy.ALLOW and row["job_id"] in jobs
        ]
        if overlapping:
            for other in await conn.fetch(q("attempt_batch_overlap_runs"), overlapping):
                others.setdefault(other["job_id"], []).append(other)
        starting: list[_Starting] = []
        for i, row, spec, view in deciding:
            job = jobs.get(row["job_id"])
            if job is None:  # held elsewhere (or gone): the one-run path waits and sees
                continue
            now: datetime = job["now"]
            if misfire_check_needed(view, now):
                continue
            request = requests[i]
            decision = decide_start(
                view,
                JobView(JobState(job["state"])),
                OverlapView(
                    tuple(
                        other_run(o)
                        for o in others.get(row["job_id"], ())
                        if o["run_id"] != row["run_id"]
                    )
                ),
                now,
                settings,
                delivery_id=request.delivery_id,
                worker_id=request.worker_id,
                early=self._store.early_window(request.early),
            )
            if decision.kind is StartKind.START:
                starting.append((i, row, spec, decision.call_time))
            elif decision.kind is StartKind.REFUSE and decision.new_state is None:
                answers[i] = StartResult.refused(now, decision.refusal, row["effective_time"])
        return starting

    async def _insert_started(
        self,
        conn: Conn,
        requests: Sequence[StartRequest],
        starting: Sequence[_Starting],
        answers: dict[int, StartResult],
    ) -> None:
        """Starts the runs decided on, in one statement, and answers each STARTED."""
        settings = self._store.settings
        started = await conn.fetch(
            q("attempt_batch_start"),
            [row["run_id"] for _, row, _, _ in starting],
            [row["nominal_time"] for _, row, _, _ in starting],
            [requests[i].delivery_id for i, _, _, _ in starting],
            [requests[i].worker_id for i, _, _, _ in starting],
            [spec.attempt_timeout + settings.timeout_grace for _, _, spec, _ in starting],
            settings.lease,
            [call_time for _, _, _, call_time in starting],
            settings.ahead_lease,
        )
        by_started = {s["run_id"]: s for s in started}
        for i, row, spec, call_time in starting:
            s = by_started.get(row["run_id"])
            if s is None:  # the run row is locked and QUEUED: this cannot happen
                raise RuntimeError(f"run {row['run_id']} did not start")
            answers[i] = self._store.started_result(
                row, spec, s["number"], s["lease_expire_time"], s["now"], call_time
            )

    async def complete_many(self, reports: Sequence[Report]) -> list[CompleteResult | DuetimeError]:
        """One answer per report, in order: what ``AttemptStore.complete`` would answer."""
        answers = await self._whole_batch(self._complete_batch, reports, "complete")
        return await self._fill(
            reports,
            answers,
            lambda r: self._store.complete(
                r.run_id,
                r.attempt,
                r.worker_id,
                r.outcome,
                r.retryable,
                r.error,
                r.call_time,
                r.call,
            ),
        )

    async def _complete_batch(self, reports: Sequence[Report]) -> dict[int, CompleteResult]:
        """The successes whose run and job nobody else holds; the rest is left out."""
        wanted = [(i, r) for i, r in enumerate(reports) if r.outcome is AttemptOutcome.SUCCEEDED]
        if not wanted:
            return {}
        answers: dict[int, CompleteResult] = {}
        async with transaction(self._store.pool) as conn:
            await generic_plans(conn)
            rows = await conn.fetch(q("attempt_batch_reports_lock"), [r.run_id for _, r in wanted])
            by_run = {row["run_id"]: row for row in rows}
            named = Counter(r.run_id for _, r in wanted)
            closing: list[tuple[int, Row]] = []
            for i, report in wanted:
                row = by_run.get(report.run_id)
                if (
                    row is None
                    or named[report.run_id] > 1
                    or row["state"] != RunState.RUNNING.value
                    or row["attempt"] != report.attempt
                    or row["open_worker_id"] != report.worker_id
                ):
                    continue  # stale, or to be decided with the lock waited for
                closing.append((i, row))
            if not closing:
                return answers
            alone = dict.fromkeys((row["job_id"] for _, row in closing), False)
            jobs = await _lock_jobs(conn, alone)
            # A success ends the run SUCCEEDED whatever else holds (a cancel asked for, the job
            # deleted); the job's lock orders it with the release of a WAITING run.
            closing = [(i, row) for i, row in closing if row["job_id"] in jobs]
            if not closing:
                return answers
            now: datetime = max(j["now"] for j in jobs.values())
            done = await conn.fetch(
                q("attempt_batch_close_succeeded"),
                [row["run_id"] for _, row in closing],
                [row["nominal_time"] for _, row in closing],
                [row["attempt"] for _, row in closing],
                now,
                [reports[i].call_time for i, _ in closing],
            )
            if len(done) != len(closing):  # the runs are locked and RUNNING: cannot happen
                raise RuntimeError("a locked running run did not close")
            ended_jobs = list({row["job_id"] for _, row in closing})
            for job in await conn.fetch(q("attempt_batch_jobs_waiting"), ended_jobs):
                await insert_outbox(conn, await release_waiting(conn, job["job_id"]))
            for i, _ in closing:
                answers[i] = CompleteResult(RunState.SUCCEEDED, None)
        for _ in closing:
            instruments.attempt_closed(AttemptOutcome.SUCCEEDED.value, "worker")
        instruments.runs_finished(RunState.SUCCEEDED.value, "", len(closing))
        began = {d["run_id"]: d["start_time"] for d in done if d["first_early"]}
        for _, row in closing:
            if row["run_id"] in began:
                count_first_start(row, began[row["run_id"]])
        return answers

    @staticmethod
    async def _whole_batch(
        batch: Callable[[Sequence[T]], Awaitable[dict[int, R]]], entries: Sequence[T], what: str
    ) -> dict[int, R]:
        """The batch's answers; none when its transaction failed and rolled back (everything it
        decided undone), so that every entry goes through the one-run path."""
        if not entries:
            return {}
        try:
            return await batch(entries)
        except Unavailable as error:
            log.warning(
                "batch transaction failed; its entries go one by one",
                extra={
                    "action": "attempt_batch_failed",
                    "operation": what,
                    "entries": len(entries),
                    "error": repr(error.__cause__),
                },
            )
            return {}

    def _spec(self, row: Row) -> JobSpec:
        return self._specs.get(row["job_id"], row["job_version"], row["spec_text"])

    @staticmethod
    async def _fill(
        requests: Sequence[T],
        decided: dict[int, R],
        one: Callable[[T], Awaitable[R]],
    ) -> list[R | DuetimeError]:
        """Answers the entries the batch left out through the one-run path."""
        answers: dict[int, R | DuetimeError] = dict(decided)
        fallback = [i for i in range(len(requests)) if i not in answers]
        limit = asyncio.Semaphore(FALLBACK_CONCURRENCY)

        async def single(i: int) -> None:
            async with limit:
                try:
                    answers[i] = await one(requests[i])
                except DuetimeError as error:
                    answers[i] = error

        await asyncio.gather(*(single(i) for i in fallback))
        return [answers[i] for i in range(len(requests))]
