"""Admission to dispatch on PostgreSQL: which runs go to Kafka now, which wait in PostgreSQL.

Every run that is to be dispatched for an attempt (a claimed occurrence, a due retry, a held
run's release, a trigger, a redrive) passes through ``admit_runs``: its team's quota (runs in
flight, the rate limit) and, in the scheduler, the dispatch credit — the most runs of its
partitions dispatched, due and not yet started. Kafka's partitions are first-in first-out, so
the credit keeps the backlog a newcomer's run waits behind short and the rest waits in
PostgreSQL (WAITING, FAIR_SHARE), where the order can still change: when credit frees, held
runs go in weighted fair order across teams. Runs claimed ahead for a later instant do not
count until their time comes: workers hold them without an execution slot and start them
ahead, so a herd claimed early goes to Kafka whole instead of at the credit's pace. Hand-backs
and the reconciler's re-enqueues do not pass through here: their run was admitted already.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple, TypeVar

from duetime_core.fairness import PriorityFairQueue
from duetime_core.jobspec import Priority
from duetime_core.quotas import Admission, Candidate, QuotaLimit, TeamState, plan_dispatch
from duetime_core.records import RunReason, RunState
from duetime_infra.dispatch import OutboxRow
from duetime_infra.pg.dispatch.redispatch import redispatch_row
from duetime_infra.pg.pool import Conn
from duetime_infra.pg.sql import q
from duetime_infra.pg.teams.quotas import lock_teams, save_rates
from duetime_infra.telemetry import instruments

K = TypeVar("K")


class RunToDispatch(NamedTuple):
    """A locked run to admit to dispatch, from a query that reads ``r.*`` of its row and its job
    version's target kind and overlap policy (a due retry, a held or a released run)."""

    run_id: uuid.UUID
    job_id: uuid.UUID
    nominal_time: datetime
    origin: str
    team_id: str
    partition: int
    effective_time: datetime
    priority: str
    traceparent: str
    trace_context: bytes | None
    target_kind: str | None
    job_overlap: str | None
    state: str
    reason: str
    quota_limit: str
    attempt: int


class DispatchCredit:
    """One scheduler's dispatch credit and the teams' fair turns, kept from pass to pass.

    ``limit`` bounds the runs of the scheduler's partitions that are QUEUED (dispatched, not
    started) and due within ``window`` (the claim's base look-ahead): the backlog a run
    dispatched now waits behind. Runs claimed further ahead by a look-ahead grown for a herd
    take none until they come that close. None: no bound. The count is read once per claim
    pass (``new_pass``) and then kept up to date by what the pass dispatches.
    """

    def __init__(self, limit: int | None, window: timedelta = timedelta(0)) -> None:
        self.limit = limit
        self.window = window
        self.fair: PriorityFairQueue[str, Any] = PriorityFairQueue()
        self._free: int | None = None

    def new_pass(self) -> None:
        self._free = None

    def horizon(self, now: datetime) -> datetime:
        """Runs due by this instant take credit."""
        return now + self.window

    async def free(self, conn: Conn, partitions: Collection[int], now: datetime) -> int | None:
        """How many more runs may be dispatched this pass: the limit less the runs of
        ``partitions`` QUEUED and due by ``horizon(now)``."""
        if self.limit is None:
            return None
        if self._free is None:
            queued: int = await conn.fetchval(
                q("admission_queued_count"), sorted(partitions), self.limit, self.horizon(now)
            )
            self._free = max(0, self.limit - queued)
        return self._free

    def took(self, dispatched: int) -> None:
        if self._free is not None:
            self._free = max(0, self._free - dispatched)


@dataclass
class Admitted:
    """The decisions of one ``admit_runs`` call, and the teams' states it changed (to be
    saved with ``save_rates`` in the same transaction)."""

    decisions: dict[Any, Admission]
    teams: dict[str, TeamState]

    def weight(self, team_id: str) -> int:
        team = self.teams.get(team_id)
        return team.quota.weight if team is not None else 1


async def admit_runs(
    conn: Conn,
    candidates: Sequence[Candidate[K]],
    now: datetime,
    *,
    credit: DispatchCredit | None = None,
    partitions: Collection[int] = (),
) -> Admitted:
    """Decides each candidate (in due order) under its team's usage row lock."""
    teams = await lock_teams(conn, {c.team_id for c in candidates})
    if credit is None:
        return Admitted(plan_dispatch(candidates, teams, now, None, PriorityFairQueue()), teams)
    free = await credit.free(conn, partitions, now)
    by = credit.horizon(now)
    decisions = plan_dispatch(candidates, teams, now, free, credit.fair, credit_by=by)
    due = {c.key for c in candidates if c.due is None or c.due <= by}
    credit.took(sum(1 for k, d in decisions.items() if d.dispatched and k in due))
    return Admitted(decisions, teams)


@dataclass(frozen=True)
class Dispatched:
    """What ``dispatch_runs`` did: the outbox rows of the runs it queued (for the caller to
    insert with its others), and how many it held."""

    outbox: list[OutboxRow]
    held: int
    # For the metrics, recorded once the caller committed (``count``).
    held_reasons: list[str] = field(default_factory=list)
    quota_delays: list[tuple[str, timedelta]] = field(default_factory=list)

    def count(self) -> None:
        """After COMMIT: the runs held and the quota delays of those let go."""
        for reason in self.held_reasons:
            instruments.runs_held(reason)
        for limit, delay in self.quota_delays:
            instruments.quota_delayed(limit, delay)


async def dispatch_runs(
    conn: Conn,
    rows: Sequence[RunToDispatch],
    now: datetime,
    *,
    credit: DispatchCredit | None = None,
    partitions: Collection[int] = (),
    not_before: datetime | None = None,
) -> Dispatched:
    """Admits runs (their rows locked by the caller) in the given (due) order: each is QUEUED
    with a new dispatch row, or held WAITING. A run held before by its quota becomes eligible
    now; ``not_before`` (a BUFFER_ONE release) moves the run's next attempt time, so its
    misfire threshold counts from there."""
    if not rows:
        return Dispatched([], 0)
    admitted = await admit_runs(
        conn,
        [
            Candidate(i, row.team_id, Priority(row.priority), row.effective_time)
            for i, row in enumerate(rows)
        ],
        now,
        credit=credit,
        partitions=partitions,
    )
    queued: list[tuple[RunToDispatch, datetime | None]] = []
    held: list[tuple[RunToDispatch, Admission]] = []
    for i, row in enumerate(rows):
        decision = admitted.decisions[i]
        if decision.dispatched:
            queued.append((row, _eligible_at_release(row, now)))
        elif (row.state, row.reason, row.quota_limit) != (
            RunState.WAITING.value,
            decision.reason.value,
            decision.limit.value,
        ):
            held.append((row, decision))
    await _write_queued(conn, queued, not_before)
    await _write_held(conn, held, not_before)
    await save_rates(conn, admitted.teams.values())
    outbox = [
        redispatch_row(row, now, team_weight=admitted.weight(row.team_id)) for row, _ in queued
    ]
    return Dispatched(
        outbox,
        len(rows) - len(queued),
        [d.reason.value for _, d in held],
        [
            (row.quota_limit, eligible - row.effective_time)
            for row, eligible in queued
            if eligible is not None
        ],
    )


def _eligible_at_release(row: RunToDispatch, now: datetime) -> datetime | None:
    """A first attempt its team's quota held: eligible from now (if it is due already)."""
    if row.attempt == 0 and row.reason == RunReason.QUOTA.value and now > row.effective_time:
        return now
    return None


async def _write_queued(
    conn: Conn, queued: list[tuple[RunToDispatch, datetime | None]], not_before: datetime | None
) -> None:
    if queued:
        await conn.execute(
            q("attempt_run_release"),
            [row.run_id for row, _ in queued],
            [row.nominal_time for row, _ in queued],
            [eligible for _, eligible in queued],
            [not_before] * len(queued),
        )


async def _write_held(
    conn: Conn, held: list[tuple[RunToDispatch, Admission]], not_before: datetime | None
) -> None:
    if not held:
        return
    await conn.execute(
        q("attempt_run_hold"),
        [row.run_id for row, _ in held],
        [row.nominal_time for row, _ in held],
        [d.reason.value for _, d in held],
        [d.limit.value for _, d in held],
        [hold_detail(d) for _, d in held],
        [not_before] * len(held),
    )


def hold_detail(decision: Admission) -> str:
    """The reason_detail of a held run."""
    if decision.reason is RunReason.FAIR_SHARE:
        return "waiting for its turn: other teams' runs are ahead of it in dispatch"
    if decision.limit is QuotaLimit.RATE:
        return "held back by the team's rate limit (runs_per_minute)"
    return "held back by the team's limit of runs in flight (max_running)"
