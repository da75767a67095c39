"""Jobs and their runs as the job API reads and changes them, on PostgreSQL.

Decisions (what the next run time is, what a change means) are the caller's, passed in as plain
values or as a function run inside the transaction under the job's row lock; this module only
knows SQL and transactions. Every definition it writes has its secret values sealed first
(those already sealed are kept as they are), so none reaches the database in clear.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import asyncpg

from duetime_core.attempts import FINAL_STATES
from duetime_core.backfill import BackfillPlan
from duetime_core.calendars import CalendarRules, job_calendars
from duetime_core.errors import AlreadyExists, FailedPrecondition, NotFound
from duetime_core.history import JobPause, VersionChange
from duetime_core.jobspec import CallSigning, HttpTarget, JobSpec, JobState, Priority
from duetime_core.planning import Occurrence
from duetime_core.quotas import Candidate, TeamState
from duetime_core.records import JobRecord, RunReason, RunRecord, RunState
from duetime_core.runkey import RunKey
from duetime_infra.codec.spec_json import spec_from_json, spec_to_json
from duetime_infra.dispatch import OutboxRow
from duetime_infra.pg.dispatch.admission import admit_runs, hold_detail
from duetime_infra.pg.dispatch.outbox_writer import insert_outbox
from duetime_infra.pg.jobs.backfill import insert_backfill, made_by, ran_at
from duetime_infra.pg.jobs.reads import JobReads, not_found, with_attempts
from duetime_infra.pg.jobs.rows import job_from_row, run_from_row
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.sql import q
from duetime_infra.pg.teams.calendars import CalendarStore, calendars_of, check_calendars_exist
from duetime_infra.pg.teams.quotas import lock_teams, read_team, save_rates
from duetime_infra.pg.teams.signing_keys import require_key
from duetime_infra.secrets.sealing import SecretBox
from duetime_infra.telemetry import instruments
from duetime_infra.tracecontext import stored_trace


@dataclass(frozen=True)
class NewRun:
    run_id: uuid.UUID
    key: RunKey
    team_id: str
    partition: int
    effective_time: datetime
    state: RunState
    # The job_versions row whose definition the run runs with.
    job_version: int
    attempt_limit: int
    priority: Priority
    traceparent: str = ""
    reason: RunReason = RunReason.NONE
    reason_detail: str = ""
    range_end_time: datetime | None = None
    occurrence_count: int = 1
    quota_limit: str = ""


@dataclass(frozen=True)
class JobWrite:
    """The new state of a job, decided by the caller under the row lock."""

    state: JobState
    spec: JobSpec
    next: Occurrence | None
    state_reason: str = ""
    pause_time: datetime | None = None
    runs: Sequence[NewRun] = field(default_factory=tuple)
    # A paused job's note and author, kept until it is resumed.
    pause: JobPause | None = None
    # The call that made the new version, recorded with it (None: unknown).
    change: VersionChange | None = None


@dataclass(frozen=True)
class Idempotency:
    operation: str
    request_id: str
    fingerprint: bytes


# Decides a job's new state from the stored job, the clock and its team's quota and usage.
Decide = Callable[[JobRecord, datetime, TeamState], JobWrite]


def _one(row: asyncpg.Record | None) -> asyncpg.Record:
    # INSERT/UPDATE ... RETURNING on a row this transaction holds always answers.
    assert row is not None
    return row


def _change_args(change: VersionChange | None) -> list[object]:
    """job_versions' change, token id, token description, changed fields and note."""
    if change is None:
        return [None, None, None, None, None]
    by = change.by
    return [
        change.kind.value,
        by.token_id if by else None,
        by.description if by else None,
        list(change.fields),
        change.note,
    ]


def _pause_args(pause: JobPause | None) -> list[object]:
    """jobs' pause note, token id, token description and pause call time."""
    if pause is None:
        return ["", None, None, None]
    by = pause.by
    return [pause.note, by.token_id if by else None, by.description if by else None, pause.time]


def _as_written(record: JobRecord, write: JobWrite) -> JobRecord:
    """The job as ``write`` would leave it, at its current version (nothing was written)."""
    nxt = write.next
    return dataclasses.replace(
        record,
        state=write.state,
        state_reason=write.state_reason,
        spec=write.spec,
        next_run_time=nxt.nominal_time if nxt else None,
        next_effective_time=nxt.effective_time if nxt else None,
        pause_time=write.pause_time,
        pause=write.pause if write.state is JobState.PAUSED else None,
    )


def _count_records(runs: list[NewRun]) -> None:
    """After COMMIT: the records a job change inserted (SKIPPED while paused, in a DST gap,
    before a schedule change)."""
    for run in runs:
        if run.state in FINAL_STATES:
            instruments.runs_finished(run.state.value, run.reason.value)


def _signing(spec: JobSpec | None) -> CallSigning | None:
    target = spec.target if spec is not None else None
    return target.signing if isinstance(target, HttpTarget) else None


async def _check_signing(
    conn: Conn, team_id: str, stored: JobSpec | None, written: JobSpec
) -> None:
    """Refuses a job that comes to ask for signing while its team has no key to sign with
    (its calls would all fail); a write that leaves the job's signing as it was is not
    checked."""
    signing = _signing(written)
    if signing not in (None, CallSigning.OFF) and signing != _signing(stored):
        await require_key(conn, team_id, "job.target.http.signing", "the job asks for signing")


class JobStore:
    def __init__(self, pool: asyncpg.Pool[asyncpg.Record], secrets: SecretBox) -> None:
        self._pool = pool
        self._secrets = secrets
        # Lists and the sets a batch acts on.
        self.reads = JobReads(pool)
        self.calendars = CalendarStore(pool)

    def _document(self, job_id: uuid.UUID, spec: JobSpec) -> dict[str, Any]:
        return spec_to_json(self._secrets.seal_spec(job_id, spec))

    async def team_quota(self, team_id: str) -> tuple[TeamState, datetime]:
        """The team's quota and usage, and the database clock's now."""
        found = await read_team(self._pool, team_id)
        if found is None:
            raise NotFound(f"team {team_id!r} not found", reason="TEAM_NOT_FOUND")
        return found

    async def calendars_named(
        self, team_id: str, names: Collection[str]
    ) -> dict[str, CalendarRules]:
        """The team's calendars of ``names`` that exist, as they are now (none named: no
        query)."""
        found = await calendars_of(self._pool, {(team_id, name) for name in names})
        return {name: rules for (_, name), rules in found.items()}

    async def calendars_for(
        self, team_id: str, spec: JobSpec
    ) -> tuple[tuple[str, CalendarRules], ...]:
        """The calendars ``spec`` excludes, as they are now, in its order (none: no query)."""
        known = await self.calendars_named(team_id, spec.excluded_calendars)
        return job_calendars(spec.excluded_calendars, known)

    async def now(self) -> datetime:
        value: datetime = await self._pool.fetchval(q("db_now"))
        return value

    async def _remembered(self, conn: Conn, team_id: str, idem: Idempotency) -> uuid.UUID | None:
        """The resource an earlier call with this request_id made, if any (under a lock)."""
        await conn.execute(q("request_lock"), team_id, idem.operation, idem.request_id)
        row = await conn.fetchrow(q("request_id_get"), team_id, idem.operation, idem.request_id)
        if row is None:
            return None
        if bytes(row["fingerprint"]) != idem.fingerprint:
            raise AlreadyExists(
                f"request_id {idem.request_id!r} was already used for a different request",
                reason="REQUEST_ID_REUSED",
            )
        resource: uuid.UUID = row["resource_id"]
        return resource

    async def _remember(
        self, conn: Conn, team_id: str, idem: Idempotency, resource: uuid.UUID
    ) -> None:
        await conn.execute(
            q("request_id_put"),
            team_id,
            idem.operation,
            idem.request_id,
            idem.fingerprint,
            resource,
        )

    async def create_job(
        self,
        team_id: str,
        job_id: uuid.UUID,
        partition: int,
        write: JobWrite,
        idem: Idempotency | None,
        now: datetime,
        check: Callable[[TeamState], None],
    ) -> JobRecord:
        """Stores a new job, once ``check`` accepted it against the team's quota and usage
        (read under the team's usage lock, so concurrent creates count each other); ``now``
        is the clock reading its schedule was resolved with."""
        async with self._pool.acquire() as conn, conn.transaction():
            if idem is not None:
                earlier = await self._remembered(conn, team_id, idem)
                if earlier is not None:
                    row = await conn.fetchrow(q("job_owned_row"), earlier, team_id)
                    if row is not None:
                        return job_from_row(row)
            check(await self._team(conn, team_id))
            await check_calendars_exist(conn, team_id, write.spec.excluded_calendars)
            await _check_signing(conn, team_id, None, write.spec)
            nxt = write.next
            row = await conn.fetchrow(
                q("job_insert"),
                job_id,
                team_id,
                partition,
                write.state.value,
                write.state_reason,
                self._document(job_id, write.spec),
                nxt.nominal_time if nxt else None,
                nxt.effective_time if nxt else None,
                now,
                *_change_args(write.change),
            )
            inserted = [r for r in write.runs if await self._insert_run(conn, r) is not None]
            if idem is not None:
                await self._remember(conn, team_id, idem, job_id)
            record = job_from_row(_one(row))
        _count_records(inserted)
        return record

    async def get_job(self, team_id: str, job_id: uuid.UUID) -> JobRecord:
        row = await self._pool.fetchrow(q("job_get"), job_id, team_id)
        if row is None:
            raise not_found("job")
        return job_from_row(row)

    async def modify_job(
        self, team_id: str, job_id: uuid.UUID, decide: Decide, *, validate_only: bool = False
    ) -> JobRecord:
        """Locks the job, lets ``decide`` choose its new state, writes it and any runs. With
        ``validate_only`` nothing is written: the job as the write would leave it is returned,
        at its current version."""
        async with self._pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(q("job_get_for_update"), job_id, team_id)
            if row is None:
                raise not_found("job")
            now: datetime = await conn.fetchval(q("db_now"))
            stored = job_from_row(row)
            write = decide(stored, now, await self._team(conn, team_id))
            if write.state is not JobState.DELETED:
                await check_calendars_exist(conn, team_id, write.spec.excluded_calendars)
            await _check_signing(conn, team_id, stored.spec, write.spec)
            if validate_only:
                return _as_written(stored, write)
            nxt = write.next
            row = await conn.fetchrow(
                q("job_write"),
                job_id,
                write.state.value,
                write.state_reason,
                self._document(job_id, write.spec),
                nxt.nominal_time if nxt else None,
                nxt.effective_time if nxt else None,
                write.pause_time,
                *_pause_args(write.pause),
                *_change_args(write.change),
            )
            inserted = [r for r in write.runs if await self._insert_run(conn, r) is not None]
            record = job_from_row(_one(row))
        _count_records(inserted)
        return record

    @staticmethod
    async def _team(conn: Conn, team_id: str) -> TeamState:
        """The team's quota and usage, its usage row locked (after the job's: the lock order)."""
        teams = await lock_teams(conn, [team_id])
        if team_id not in teams:
            raise NotFound(f"team {team_id!r} not found", reason="TEAM_NOT_FOUND")
        return teams[team_id]

    async def _insert_run(self, conn: Conn, run: NewRun) -> asyncpg.Record | None:
        trace_context, traceparent = stored_trace(run.traceparent, run.run_id)
        return await conn.fetchrow(
            q("run_insert"),
            run.run_id,
            run.key.job_id,
            run.team_id,
            run.partition,
            run.key.nominal_time,
            run.effective_time,
            run.key.origin,
            run.state.value,
            run.reason.value,
            run.reason_detail,
            run.attempt_limit,
            run.range_end_time,
            run.occurrence_count,
            traceparent,
            run.job_version,
            run.priority.value,
            run.quota_limit,
            trace_context,
        )

    async def trigger_run(
        self,
        team_id: str,
        job_id: uuid.UUID,
        idem: Idempotency,
        build: Callable[[JobRecord, datetime, int], tuple[NewRun, OutboxRow]],
    ) -> RunRecord:
        """One run outside the schedule, once per request_id: QUEUED with its outbox row, or
        WAITING when its team's quota holds it back. ``build`` gets the job, the clock and the
        team's dispatch weight."""
        async with self._pool.acquire() as conn, conn.transaction():
            earlier = await self._remembered(conn, team_id, idem)
            if earlier is not None:
                return await self._run_with_attempts(conn, team_id, job_id, earlier)
            row = await conn.fetchrow(q("job_get"), job_id, team_id)
            if row is None:
                raise not_found("job")
            now: datetime = await conn.fetchval(q("db_now"))
            job = job_from_row(row)
            admitted = await admit_runs(conn, [Candidate(0, team_id, job.spec.priority)], now)
            decision = admitted.decisions[0]
            new_run, outbox = build(job, now, admitted.weight(team_id))
            if not decision.dispatched:
                new_run = dataclasses.replace(
                    new_run,
                    state=RunState.WAITING,
                    reason=decision.reason,
                    reason_detail=hold_detail(decision),
                    quota_limit=decision.limit.value,
                )
            inserted = await self._insert_run(conn, new_run)
            if inserted is None:  # the run key exists already: the same trigger, made before
                return await self._run_by_key(conn, team_id, new_run.key)
            if decision.dispatched:
                await insert_outbox(conn, [outbox])
            await save_rates(conn, admitted.teams.values())
            await self._remember(conn, team_id, idem, new_run.run_id)
            return run_from_row(inserted)

    async def backfill(
        self,
        team_id: str,
        job_id: uuid.UUID,
        idem: Idempotency,
        origin: str,
        plan: Callable[[JobRecord, set[datetime]], BackfillPlan],
        *,
        one_at_a_time: bool,
    ) -> tuple[BackfillPlan, int]:
        """A backfill's runs, once per request_id, under the job's row lock (so two backfills
        of one job see each other's runs). ``plan`` gets the locked job and the nominal times
        that ran (succeeded or active); occurrences the same request made runs for before are
        not made again. Returns the plan and how many runs were made (a repeated request:
        how many it made the first time)."""
        async with self._pool.acquire() as conn, conn.transaction():
            earlier = await self._remembered(conn, team_id, idem)
            row = await conn.fetchrow(q("job_get_for_update"), job_id, team_id)
            if row is None:
                raise not_found("job")
            job = job_from_row(row)
            first = plan(job, set())
            if earlier is not None:
                before = sorted(await made_by(conn, job_id, origin, first.occurrences))
                return BackfillPlan(first.occurrences, tuple(before), first.excluded), len(before)
            ran = await ran_at(conn, job_id, first.occurrences)
            ran |= await made_by(conn, job_id, origin, first.occurrences)
            chosen = plan(job, ran)
            now: datetime = await conn.fetchval(q("db_now"))
            made = await insert_backfill(
                conn, job, origin, chosen, now, one_at_a_time=one_at_a_time
            )
            await self._remember(conn, team_id, idem, uuid.uuid5(job_id, origin))
            return chosen, made

    async def backfill_ran(self, job_id: uuid.UUID, times: Sequence[datetime]) -> set[datetime]:
        """The nominal times among ``times`` that have a run that succeeded or is active (no
        lock: for a count)."""
        async with self._pool.acquire() as conn:
            return await ran_at(conn, job_id, times)

    async def _run_by_key(self, conn: Conn, team_id: str, key: RunKey) -> RunRecord:
        row = await conn.fetchrow(
            q("run_by_key"), key.job_id, key.nominal_time, key.origin, team_id
        )
        if row is None:
            raise not_found("run")
        return (await with_attempts(conn, [row]))[0]

    async def _run_with_attempts(
        self, conn: Conn, team_id: str, job_id: uuid.UUID, run_id: uuid.UUID
    ) -> RunRecord:
        row = await conn.fetchrow(q("run_get"), run_id, job_id, team_id)
        if row is None:
            raise not_found("run")
        return (await with_attempts(conn, [row]))[0]

    async def get_run(self, team_id: str, job_id: uuid.UUID, run_id: uuid.UUID) -> RunRecord:
        async with self._pool.acquire() as conn:
            return await self._run_with_attempts(conn, team_id, job_id, run_id)

    async def redrive_run(
        self,
        team_id: str,
        job_id: uuid.UUID,
        run_id: uuid.UUID,
        idem: Idempotency,
        build: Callable[[RunRecord, JobSpec, datetime, int], tuple[int, OutboxRow]],
    ) -> RunRecord:
        """Back to QUEUED with a fresh attempt budget (WAITING when its team's quota holds
        it back), once per request_id. ``build`` gets the run, its definition, the clock and
        the team's dispatch weight."""
        async with self._pool.acquire() as conn, conn.transaction():
            earlier = await self._remembered(conn, team_id, idem)
            if earlier is not None:
                return await self._run_with_attempts(conn, team_id, job_id, earlier)
            row = await conn.fetchrow(q("run_get_for_update"), run_id, job_id, team_id)
            if row is None:
                raise not_found("run")
            if row["state"] != RunState.DEAD_LETTERED.value:
                raise FailedPrecondition(
                    f"only a DEAD_LETTERED run can be redriven; this one is {row['state']}",
                    reason="RUN_NOT_DEAD_LETTERED",
                )
            now: datetime = await conn.fetchval(q("db_now"))
            record, snapshot = run_from_row(row), spec_from_json(row["job_snapshot"])
            admitted = await admit_runs(conn, [Candidate(0, team_id, snapshot.priority)], now)
            decision = admitted.decisions[0]
            budget, outbox = build(record, snapshot, now, admitted.weight(team_id))
            updated = await conn.fetchrow(q("run_redrive"), run_id, row["nominal_time"], budget)
            if decision.dispatched:
                await insert_outbox(conn, [outbox])
            else:
                updated = await conn.fetchrow(
                    q("run_hold_one"),
                    run_id,
                    row["nominal_time"],
                    decision.reason.value,
                    decision.limit.value,
                    hold_detail(decision),
                )
            await save_rates(conn, admitted.teams.values())
            await self._remember(conn, team_id, idem, run_id)
            return (await with_attempts(conn, [_one(updated)]))[0]
