"""Team quotas and the rule that admits a run to dispatch or holds it back.

A team has a quota (stored jobs, dispatches per minute with a burst, runs in flight at once,
the highest priority it may use, its weight among teams) and a usage that the store keeps
exact. A run is admitted when its team is under the in-flight limit and the rate limit lets
the dispatch through; otherwise it is held (WAITING, reason QUOTA) and released later, in due
order, as soon as the team is under its limits. The rate limit is a GCRA: a burst of
``rate_burst`` dispatches at once, then one every ``60 s / runs_per_minute``. A run claimed
ahead of its time is charged at that time; runs arriving before it fill the gap up to it
(``_take_rate``), so a claim ahead holds back no run that arrives now.

Pure: the store loads the team's row under its lock, asks these functions, and writes back.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Generic, TypeVar

from duetime_core.errors import PermissionDenied, QuotaViolation, ResourceExhausted
from duetime_core.fairness import PriorityFairQueue
from duetime_core.jobspec import JobState, Priority
from duetime_core.records import RunReason

_PRIORITY_RANK = {Priority.LOW: 0, Priority.NORMAL: 1, Priority.HIGH: 2}


class QuotaLimit(enum.StrEnum):
    """The limit that holds a run back."""

    NONE = ""
    RATE = "RATE"  # runs_per_minute (with its burst)
    CONCURRENCY = "CONCURRENCY"  # max_running


@dataclass(frozen=True)
class TeamQuota:
    """A team's limits as they apply (its own, or the platform's default). 0: no limit."""

    max_stored_jobs: int = 100_000
    runs_per_minute: int = 60_000
    rate_burst: int = 20_000
    max_running: int = 20_000
    max_priority: Priority = Priority.NORMAL
    weight: int = 1

    def allows_priority(self, priority: Priority) -> bool:
        return _PRIORITY_RANK[priority] <= _PRIORITY_RANK[self.max_priority]

    @property
    def emission_interval(self) -> timedelta | None:
        """The GCRA's spacing between dispatches; None without a rate limit."""
        if self.runs_per_minute <= 0:
            return None
        return timedelta(minutes=1) / self.runs_per_minute


@dataclass
class TeamState:
    """A team's quota and usage, read under its usage row's lock and changed as runs are
    admitted, so one decision sees the ones before it."""

    team_id: str
    quota: TeamQuota
    stored_jobs: int = 0
    in_flight: int = 0
    held: int = 0
    rate_tat: datetime | None = None
    # A chain of charges made ahead of time (runs claimed before they are due): the due time
    # it begins at (None: no chain), and the TAT of the arrivals that fill the gap before it.
    rate_ahead_from: datetime | None = None
    rate_gap_tat: datetime | None = None
    # Set when the rate limit's state changed and must be written back.
    dirty: bool = field(default=False, compare=False)

    def rate_available(self, now: datetime) -> int:
        """How many dispatches the rate limit lets through at ``now`` (the burst at most):
        those the gap before a chain takes, then those after the chain's end."""
        interval = self.quota.emission_interval
        if interval is None:
            return self.quota.rate_burst
        tolerance = _tolerance(self.quota, interval)
        ahead_from = self._gap_end(now)
        in_gap = 0
        if ahead_from is not None:
            base = _later(self.rate_gap_tat, now)
            if base - now <= tolerance and base + interval <= ahead_from:
                in_gap = 1 + min(
                    (now + tolerance - base) // interval, (ahead_from - base) // interval - 1
                )
        spare = now + tolerance - _later(self.rate_tat, now)
        after = 0 if spare < timedelta(0) else spare // interval + 1
        return min(self.quota.rate_burst, in_gap + after)

    def rate_eligible_time(self, now: datetime) -> datetime:
        """When the rate limit next lets a dispatch through (``now`` if it does now)."""
        interval = self.quota.emission_interval
        if interval is None:
            return now
        tolerance = _tolerance(self.quota, interval)
        after = now if self.rate_tat is None else max(now, self.rate_tat - tolerance)
        ahead_from = self._gap_end(now)
        if ahead_from is not None:
            at = now if self.rate_gap_tat is None else max(now, self.rate_gap_tat - tolerance)
            if _later(self.rate_gap_tat, at) + interval <= ahead_from:
                return min(at, after)
        return after

    def _gap_end(self, now: datetime) -> datetime | None:
        """Where the gap before a chain of charges made ahead of time ends, while it is open
        at ``now``; None when there is none."""
        ahead_from = self.rate_ahead_from
        return ahead_from if ahead_from is not None and now < ahead_from else None


def _tolerance(quota: TeamQuota, interval: timedelta) -> timedelta:
    """The GCRA's burst tolerance: how far ahead of an arrival its TAT may be."""
    return interval * (quota.rate_burst - 1)


def _later(tat: datetime | None, arrival: datetime) -> datetime:
    return tat if tat is not None and tat > arrival else arrival


def _take_rate(team: TeamState, arrival: datetime, now: datetime) -> bool:
    """GCRA: a dispatch at ``arrival`` conforms when the theoretical arrival time is at most
    the burst tolerance ahead of it; the TAT then moves on by one emission interval.

    GCRA assumes arrivals in time order, and a run claimed ahead arrives at its due time,
    later than the runs arriving now. So the first charge past the TAT and ``now`` begins a
    chain there (``rate_ahead_from``), and arrivals before it fill the gap on their own TAT
    (``rate_gap_tat``) as long as that gap's work ends by the chain's start: the charges,
    taken in time order, are then exactly a conforming GCRA sequence. Anything else (or what
    the gap has no room for) is charged after the chain, on ``rate_tat``."""
    interval = team.quota.emission_interval
    if interval is None:
        return True
    tolerance = _tolerance(team.quota, interval)
    if team.rate_ahead_from is not None and now >= team.rate_ahead_from:
        team.rate_ahead_from = team.rate_gap_tat = None
        team.dirty = True
    ahead_from = team.rate_ahead_from
    if ahead_from is None and arrival > now and arrival > _later(team.rate_tat, now):
        team.rate_ahead_from, team.rate_gap_tat = arrival, team.rate_tat
        team.rate_tat = arrival + interval
        team.dirty = True
        return True
    if ahead_from is not None and arrival < ahead_from:
        base = _later(team.rate_gap_tat, arrival)
        if base - arrival <= tolerance and base + interval <= ahead_from:
            team.rate_gap_tat = base + interval
            team.dirty = True
            return True
    base = _later(team.rate_tat, arrival)
    if base - arrival > tolerance:
        return False
    team.rate_tat = base + interval
    team.dirty = True
    return True


def admit(team: TeamState, arrival: datetime, now: datetime | None = None) -> QuotaLimit:
    """Admits one run whose dispatch counts from ``arrival`` (its effective time, or ``now``
    when that is later; ``now`` defaults to ``arrival``): ``QuotaLimit.NONE`` and the usage
    counted, or the limit that holds it. The in-flight limit is checked first, so a run it
    holds spends no rate."""
    limit = team.quota.max_running
    if limit > 0 and team.in_flight >= limit:
        return QuotaLimit.CONCURRENCY
    if not _take_rate(team, arrival, arrival if now is None else now):
        return QuotaLimit.RATE
    team.in_flight += 1
    return QuotaLimit.NONE


# The job states that count as stored jobs (migration 4's duetime_job_stored is the same).
STORED_STATES = frozenset({JobState.ACTIVE, JobState.PAUSED})


def stored_jobs_violation(team: TeamState, adding: int) -> QuotaViolation | None:
    """The stored-jobs quota would be exceeded by ``adding`` more ACTIVE or PAUSED jobs (a
    resume adds none, but is refused while the team is over a lowered quota)."""
    limit = team.quota.max_stored_jobs
    if limit <= 0 or (team.stored_jobs + adding <= limit and team.stored_jobs <= limit):
        return None
    return QuotaViolation(
        "max_stored_jobs",
        str(limit),
        str(team.stored_jobs),
        f"the team may store {limit} active or paused jobs and has {team.stored_jobs}",
    )


def priority_violation(quota: TeamQuota, priority: Priority) -> QuotaViolation | None:
    if quota.allows_priority(priority):
        return None
    return QuotaViolation(
        "max_priority",
        quota.max_priority.value,
        priority.value,
        f"priority {priority.value} is above the team's highest, {quota.max_priority.value}; "
        "an operator can grant it",
    )


def check_job_quota(team: TeamState, *, priority: Priority | None, adding: int | None) -> None:
    """Refuses a job write whose ``priority`` (None: unchanged) the team was not granted
    (PERMISSION_DENIED), or that would store ``adding`` more jobs (None: no change in what is
    stored) past the team's quota (RESOURCE_EXHAUSTED); both with the quota violated."""
    if priority is not None:
        refused = priority_violation(team.quota, priority)
        if refused is not None:
            raise PermissionDenied(
                refused.description, reason="PRIORITY_NOT_GRANTED", quota_violations=[refused]
            )
    if adding is not None:
        exceeded = stored_jobs_violation(team, adding)
        if exceeded is not None:
            raise ResourceExhausted(
                exceeded.description, reason="STORED_JOBS_QUOTA", quota_violations=[exceeded]
            )


K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Candidate(Generic[K]):
    """A run that wants to be dispatched now."""

    key: K
    team_id: str
    priority: Priority
    # Its effective time: a run dispatched ahead of it (the claim's look-ahead) spends its
    # team's rate at that time, not at dispatch. None: now.
    due: datetime | None = None


@dataclass(frozen=True)
class Admission:
    """What becomes of a candidate: dispatched (``reason`` NONE), or held WAITING with reason
    QUOTA (and the limit) or FAIR_SHARE."""

    reason: RunReason = RunReason.NONE
    limit: QuotaLimit = QuotaLimit.NONE

    @property
    def dispatched(self) -> bool:
        return self.reason is RunReason.NONE


DISPATCH = Admission()
FAIR_SHARE = Admission(RunReason.FAIR_SHARE)


def plan_dispatch(
    candidates: Sequence[Candidate[K]],
    teams: Mapping[str, TeamState],
    now: datetime,
    credit: int | None,
    fair: PriorityFairQueue[str, Candidate[K]],
    credit_by: datetime | None = None,
) -> dict[K, Admission]:
    """Decides every candidate (given in due order): each team's quota is applied in due
    order; when ``credit`` (how many more runs due by ``credit_by``, default ``now``, may be
    dispatched; None: no bound) is short, it goes to the candidates due by then in weighted
    fair order across teams (``fair`` keeps the teams' turns from one call to the next), and
    the rest of them wait for their turn (FAIR_SHARE). Candidates due later (claimed further
    ahead for a herd) take no credit: they are only the backlog of a later instant. A team
    whose run is held by its quota holds its later runs too, so they go in due order."""
    decided: dict[K, Admission] = {}
    blocked: dict[str, QuotaLimit] = {}

    def decide(candidate: Candidate[K]) -> Admission:
        team = teams.get(candidate.team_id)
        if team is None:  # no usage row: nothing to enforce
            return DISPATCH
        due = candidate.due
        arrival = now if due is None else max(now, due)
        limit = blocked.get(candidate.team_id) or admit(team, arrival, now)
        if limit is QuotaLimit.NONE:
            return DISPATCH
        blocked[candidate.team_id] = limit
        return Admission(RunReason.QUOTA, limit)

    by = now if credit_by is None else credit_by
    due = [c for c in candidates if c.due is None or c.due <= by]
    if credit is None or credit >= len(due):
        for candidate in candidates:
            decided[candidate.key] = decide(candidate)
        return decided

    _share_credit(due, teams, credit, fair, decide, decided)
    for candidate in due:
        if candidate.key not in decided:
            limit = blocked.get(candidate.team_id)
            decided[candidate.key] = Admission(RunReason.QUOTA, limit) if limit else FAIR_SHARE
    for candidate in candidates:  # the later ones, after the due ones as in due order
        if candidate.key not in decided:
            decided[candidate.key] = decide(candidate)
    return decided


def _share_credit(
    due: Sequence[Candidate[K]],
    teams: Mapping[str, TeamState],
    credit: int,
    fair: PriorityFairQueue[str, Candidate[K]],
    decide: Callable[[Candidate[K]], Admission],
    decided: dict[K, Admission],
) -> None:
    """Gives ``credit`` to the ``due`` candidates in weighted fair order across teams, each
    decided by its quota as it comes; what the credit did not reach is left undecided."""
    fair.clear()
    for candidate in due:
        team = teams.get(candidate.team_id)
        fair.push(
            candidate.priority, candidate.team_id, team.quota.weight if team else 1, candidate
        )
    while credit > 0 and fair:
        candidate = fair.pop()
        admission = decide(candidate)
        decided[candidate.key] = admission
        if admission.dispatched:
            credit -= 1
    fair.clear()
