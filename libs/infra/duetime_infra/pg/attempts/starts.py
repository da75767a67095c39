"""Starting attempts: load the facts of a batch of runs, let ``duetime_core.attempts`` decide,
write the answers; a batch of one is a batch.

A pass runs in one of two modes. Trying (the batch as it comes): its row and job locks are
taken with SKIP LOCKED, so it never waits and cannot deadlock, and what it cannot decide
without waiting is left out — a run or job another transaction holds, a second run of a job
already in the batch (the earliest goes first and the later one must see it; not under
OVERLAP_POLICY_ALLOW, where no run changes another's start), a decision that
writes beyond the batch's own rows (a refusal that moves the run, which may release another, or
a CANCEL_PREVIOUS). Waiting (one run): the same steps with blocking locks in the usual order,
so every entry is answered. ``AttemptStore`` sends what a trying pass left out through a
waiting pass, one run at a time.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

import asyncpg

from duetime_core.attempts import (
    RUN_NOT_FOUND,
    AttemptSettings,
    JobView,
    OtherRun,
    OverlapView,
    StartDecision,
    StartKind,
    StartView,
    check_admission,
    decide_start,
    misfire_check_needed,
    shares_job_lock,
)
from duetime_core.jobspec import JobSpec, JobState, MisfirePolicy, OverlapPolicy
from duetime_core.records import RunReason, RunState
from duetime_infra.pg.attempts.outcome import (
    LockedJob,
    lock_jobs,
    lock_runs,
    set_run_state,
    transaction,
)
from duetime_infra.pg.attempts.results import Pool, StartRequest, StartResult
from duetime_infra.pg.attempts.start_view import (
    Admitted,
    Decided,
    StartFacts,
    count_start,
    decided_in_batch,
    start_view,
    started_result,
    writes_beyond_the_batch,
)
from duetime_infra.pg.dispatch.spec_cache import SpecCache
from duetime_infra.pg.pool import Conn, generic_plans
from duetime_infra.pg.sql import q


class Starts:
    def __init__(self, pool: Pool, settings: AttemptSettings, specs: SpecCache) -> None:
        self._pool = pool
        self._settings = settings
        self._specs = specs

    def early_window(self, early: bool) -> timedelta:
        """How long before its time a run may start for a worker that asked ``early``."""
        return self._settings.max_early_start if early else timedelta(0)

    async def run(self, requests: Sequence[StartRequest], wait: bool) -> dict[int, StartResult]:
        """The answers of one pass by request index (see the module's doc for ``wait``)."""
        answers: dict[int, StartResult] = {}
        counted: list[tuple[StartFacts, StartDecision, int]] = []
        async with transaction(self._pool) as conn:
            await generic_plans(conn)
            rows = await lock_runs(
                conn, "attempt_batch_runs_lock", StartFacts, [r.run_id for r in requests], wait
            )
            if wait and not rows:
                return {0: StartResult.refused(await conn.fetchval(q("db_now")), RUN_NOT_FOUND)}
            admitted = await self._admit(conn, requests, rows, answers)
            decided = await self._decide(
                conn, requests, admitted if wait else decided_in_batch(admitted), wait
            )
            starting: list[tuple[int, StartFacts, JobSpec, datetime | None]] = []
            for i, row, spec, decision, now in decided:
                if not wait and writes_beyond_the_batch(decision):
                    continue
                counted.append((row, decision, i))
                if decision.kind is StartKind.START or (
                    decision.kind is StartKind.SUPERSEDE and await self._supersede(conn, decision)
                ):
                    starting.append((i, row, spec, decision.call_time))
                elif decision.kind is StartKind.REFUSE:
                    if decision.outcome is not None:  # a refusal that moves the run
                        await set_run_state(conn, row, row.attempt, decision.outcome, now)
                    answers[i] = StartResult.refused(now, decision.refusal, row.effective_time)
                else:  # TOO_EARLY, or superseding with earlier attempts still to stop
                    answers[i] = StartResult.too_early(now, decision.until)
            if starting:
                await self._insert_started(conn, requests, starting, answers)
        for row, decision, i in counted:
            count_start(row, decision, answers[i])
        return answers

    async def _admit(
        self,
        conn: Conn,
        requests: Sequence[StartRequest],
        rows: Sequence[StartFacts],
        answers: dict[int, StartResult],
    ) -> list[Admitted]:
        """The admission check of each start whose run row the pass locked: what it answers
        from the run alone (a repeated start, too early, a refusal that leaves the run as it
        is) goes into ``answers``; the starts it lets through are returned, each with its
        definition and view, built once. A run named twice is left to waiting passes."""
        by_run = {row.run_id: row for row in rows}
        named = Counter(r.run_id for r in requests)
        admitted: list[Admitted] = []
        replays: list[Admitted] = []
        for i, request in enumerate(requests):
            row = by_run.get(request.run_id)
            if row is None or named[request.run_id] > 1:
                continue
            spec = self._specs.get(row.job_id, row.job_version, row.spec_text)
            view = start_view(row, spec)
            answered = check_admission(
                view,
                row.now,
                request.delivery_id,
                request.worker_id,
                early=self.early_window(request.early),
            )
            if answered is None:
                admitted.append((i, row, spec, view))
            elif answered.kind is StartKind.REPLAY:
                replays.append((i, row, spec, view))
            elif answered.kind is StartKind.TOO_EARLY:
                answers[i] = StartResult.too_early(row.now, answered.until)
            else:  # the admission check refuses without changing the run
                answers[i] = StartResult.refused(row.now, answered.refusal, row.effective_time)
        if replays:
            await self._replay(conn, replays, answers)
        return admitted

    async def _replay(
        self, conn: Conn, replays: Sequence[Admitted], answers: dict[int, StartResult]
    ) -> None:
        """Repeated starts (the same delivery from the same worker: the first answer was lost,
        or came too late) answer their open attempt, its lease renewed as a beat renews it; an
        attempt being cancelled keeps its lease."""
        renewed = await conn.fetch(
            q("attempt_renew_replayed"),
            [row.run_id for _, row, _, _ in replays],
            [row.nominal_time for _, row, _, _ in replays],
            [row.attempt for _, row, _, _ in replays],
            self._settings.lease,
        )
        leases = {r["run_id"]: r["lease_expire_time"] for r in renewed}
        for i, row, spec, _ in replays:
            # A repeated start's call time: its attempt's, while that is ahead of now.
            call_time = row.open_call_time
            lease = leases.get(row.run_id, row.open_lease_expire_time)
            assert lease is not None  # a repeated start's attempt is open: it has a lease
            answers[i] = started_result(
                row,
                spec,
                row.attempt,
                lease,
                row.now,
                call_time if call_time is not None and call_time > row.now else None,
            )

    async def _decide(
        self, conn: Conn, requests: Sequence[StartRequest], deciding: Sequence[Admitted], wait: bool
    ) -> list[Decided]:
        """The start decision of each admitted run under its job's lock, with the job's other
        runs for the overlap check; a trying pass leaves out a run whose job is held."""
        if not deciding:
            return []
        shared: dict[uuid.UUID, bool] = {}
        for _, row, _, view in deciding:
            shared[row.job_id] = shared.get(row.job_id, True) and shares_job_lock(view)
        jobs = await lock_jobs(conn, shared, wait)
        others = await self._overlapping(conn, deciding, jobs)
        decided: list[Decided] = []
        for i, row, spec, view in deciding:
            job = jobs.get(row.job_id)
            if job is None and not wait:  # held elsewhere (or gone): a waiting pass sees
                continue
            now = job.now if job is not None else row.now
            request = requests[i]
            decision = decide_start(
                view,
                JobView(JobState(job.state) if job is not None else None),
                OverlapView(
                    tuple(o for o in others.get(row.job_id, ()) if o.run_id != row.run_id),
                    await self._newer_scheduled(conn, row, view, now),
                ),
                now,
                self._settings,
                delivery_id=request.delivery_id,
                worker_id=request.worker_id,
                early=self.early_window(request.early),
            )
            decided.append((i, row, spec, decision, now))
        return decided

    @staticmethod
    async def _overlapping(
        conn: Conn, deciding: Sequence[Admitted], jobs: dict[uuid.UUID, LockedJob]
    ) -> dict[uuid.UUID, list[OtherRun]]:
        """The open runs of the locked jobs whose overlap policy asks for them (other runs of
        the job decide nothing under OVERLAP_POLICY_ALLOW), by job."""
        wanted = [
            row.job_id
            for _, row, _, view in deciding
            if view.overlap is not OverlapPolicy.ALLOW and row.job_id in jobs
        ]
        others: dict[uuid.UUID, list[OtherRun]] = {}
        if wanted:
            for o in await conn.fetch(q("attempt_overlap_runs"), wanted):
                others.setdefault(o["job_id"], []).append(
                    OtherRun(
                        run_id=o["run_id"],
                        nominal_time=o["nominal_time"],
                        state=RunState(o["state"]),
                        attempt=o["attempt"],
                        open_attempt=o["open_attempt"],
                        cancel_reason=o["cancel_reason"],
                    )
                )
        return others

    @staticmethod
    async def _newer_scheduled(conn: Conn, row: StartFacts, view: StartView, now: datetime) -> bool:
        """RUN_ONCE past its misfire threshold: does a later scheduled occurrence run or ran?"""
        if not misfire_check_needed(view, now) or view.misfire.policy is not MisfirePolicy.RUN_ONCE:
            return False
        newer: bool = await conn.fetchval(
            q("attempt_newer_scheduled_exists"), row.job_id, row.nominal_time
        )
        return newer

    @staticmethod
    async def _supersede(conn: Conn, decision: StartDecision) -> bool:
        """Tells the previous runs to stop; True when nothing is left to wait for."""
        if decision.cancel_attempts:
            await conn.execute(
                q("attempt_request_cancel"),
                [o.run_id for o in decision.cancel_attempts],
                [o.nominal_time for o in decision.cancel_attempts],
                [o.attempt for o in decision.cancel_attempts],
                RunReason.SUPERSEDED.value,
            )
        cancelled: list[asyncpg.Record] = []
        if decision.cancel_runs:
            cancelled = await conn.fetch(
                q("attempt_cancel_idle_runs"),
                [o.run_id for o in decision.cancel_runs],
                [o.nominal_time for o in decision.cancel_runs],
                RunReason.SUPERSEDED.value,
                "replaced by a newer run of the job",
            )
        return decision.start_after_cancel and len(cancelled) == len(decision.cancel_runs)

    async def _insert_started(
        self,
        conn: Conn,
        requests: Sequence[StartRequest],
        starting: Sequence[tuple[int, StartFacts, JobSpec, datetime | None]],
        answers: dict[int, StartResult],
    ) -> None:
        """Starts the runs decided on, in one statement, and answers each STARTED."""
        settings = self._settings
        started = await conn.fetch(
            q("attempt_start"),
            [row.run_id for _, row, _, _ in starting],
            [row.nominal_time for _, row, _, _ in starting],
            [requests[i].delivery_id for i, _, _, _ in starting],
            [requests[i].worker_id for i, _, _, _ in starting],
            [spec.attempt_timeout + settings.timeout_grace for _, _, spec, _ in starting],
            settings.lease,
            [call_time for _, _, _, call_time in starting],
            settings.ahead_lease,
            [row.run_id for _, row, _, _ in starting if row.attempt > 0],  # a retry's
        )
        by_run = {s["run_id"]: s for s in started}
        for i, row, spec, call_time in starting:
            s = by_run.get(row.run_id)
            if s is None:  # the run row is locked and QUEUED: this cannot happen
                raise RuntimeError(f"run {row.run_id} did not start")
            answers[i] = started_result(
                row, spec, s["number"], s["lease_expire_time"], s["now"], call_time
            )
