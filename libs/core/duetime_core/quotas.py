"""Team quotas and the rule that admits a run to dispatch or holds it back.

A team has a quota (stored jobs, dispatches per minute with a burst, runs in flight at once,
the highest priority it may use, its weight among teams) and a usage that the store keeps
exact. A run is admitted when its team is under the in-flight limit and the rate limit lets
the dispatch through; otherwise it is held (WAITING, reason QUOTA) and released later, in due
order, as soon as the team is under its limits. The rate limit is a GCRA: a burst of
``rate_burst`` dispatches at once, then one every ``60 s / runs_per_minute``. A run claimed
ahead of its time is charged at that time and kept apart until then; a dispatch is admitted
exactly when every charge, taken in time order, still conforms (``_take_rate``), so claims
ahead hold back no run arriving now that the rate has room for.

Pure: the store loads the team's row under its lock, asks these functions, and writes back.
"""

from __future__ import annotations

import bisect
import enum
from collections import deque
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
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


# At most this many distinct times are kept for the charges made ahead (a herd due at one
# instant is one of them); past it the earliest is taken as charged already (_take_rate).
MAX_RATE_AHEAD = 64

# Charges made ahead of time: each due time and how many, in time order.
Charges = list[tuple[datetime, int]]


@dataclass
class TeamState:
    """A team's quota and usage, read under its usage row's lock and changed as runs are
    admitted, so one decision sees the ones before it."""

    team_id: str
    quota: TeamQuota
    stored_jobs: int = 0
    in_flight: int = 0
    held: int = 0
    # The rate limit: the TAT of the charges due by now, the charges made ahead of time (runs
    # claimed before they are due) kept apart until their time, and the TAT of both in turn:
    # past every charge in time order, it is what a charge after all the others goes on from.
    # Set together (``restore_rate``, admissions), never one by one: they must agree.
    rate_tat: datetime | None = field(default=None, init=False)
    rate_ahead: Charges = field(default_factory=list, init=False)
    rate_end: datetime | None = field(default=None, init=False)
    # Set when the rate limit's state changed and must be written back.
    dirty: bool = field(default=False, compare=False)

    def rate_available(self, now: datetime) -> int:
        """How many dispatches the rate limit lets through at ``now`` (the burst at most): the
        room the charges before and after ``now`` leave within the burst tolerance."""
        interval = self.quota.emission_interval
        if interval is None:
            return self.quota.rate_burst
        tat, ahead = _charged(self.rate_tat, self.rate_ahead, now, interval)
        room = _tolerance(self.quota, interval) - _overlap(tat, ahead, now, interval)
        return 0 if room < timedelta(0) else min(self.quota.rate_burst, room // interval + 1)

    def rate_eligible_time(self, now: datetime) -> datetime:
        """When the rate limit next lets a dispatch through (``now`` if it does now): the
        earliest time, in the first span between charges ahead that has room."""
        interval = self.quota.emission_interval
        if interval is None:
            return now
        tolerance = _tolerance(self.quota, interval)
        tat, ahead = _charged(self.rate_tat, self.rate_ahead, now, interval)
        begin = now
        for (at, count), start in zip(ahead, _starts(ahead, interval), strict=True):
            # In [begin, at) an arrival at t conforms when tat - t, t - start and tat - start
            # are each within the tolerance (_overlap's two leads add up within it).
            first = max(begin, _later(tat, begin) - tolerance)
            if first < at and max(first, _later(tat, start)) - start <= tolerance:
                return first
            begin, tat = at, _later(tat, at) + interval * count
        return max(begin, _later(tat, begin) - tolerance)

    def restore_rate(
        self, end: datetime | None, tat: datetime | None, ahead: Charges, chained: bool
    ) -> None:
        """Takes the rate limit's state as stored: ``end`` (``rate_end``, which an older build
        charges after), ``tat``, the charges ahead, and whether such a build's chain of charges
        made ahead is open. When they do not agree (it charged the team since, or the rate
        changed), everything is taken as charged by the end: safe, as it is past every charge
        in time order, though runs arriving before the charges ahead lose the time before
        them."""
        self.rate_tat, self.rate_ahead = tat, ahead
        self.rate_end = _end(tat, ahead, self.quota.emission_interval)
        if chained or self.rate_end != end:
            if end is not None:
                self.rate_end = _later(self.rate_end, end)
            self.rate_tat, self.rate_ahead = self.rate_end, []


def _tolerance(quota: TeamQuota, interval: timedelta) -> timedelta:
    """The GCRA's burst tolerance: how far ahead of an arrival its TAT may be."""
    return interval * (quota.rate_burst - 1)


def _later(tat: datetime | None, arrival: datetime) -> datetime:
    return tat if tat is not None and tat > arrival else arrival


def _charged(
    tat: datetime | None, ahead: Charges, at: datetime, interval: timedelta
) -> tuple[datetime | None, Charges]:
    """The charges ahead due by ``at`` taken into the TAT, and those left ahead of it."""
    due = 0
    for time, count in ahead:
        if time > at:
            break
        tat = _later(tat, time) + interval * count
        due += 1
    return tat, ahead[due:]


def _end(tat: datetime | None, ahead: Charges, interval: timedelta | None) -> datetime | None:
    """The TAT of ``tat``'s charges and then ``ahead``, in time order."""
    if interval is None or not ahead:
        return tat
    return _charged(tat, ahead, ahead[-1][0], interval)[0]


def _backward_starts(ahead: Charges, interval: timedelta) -> Iterator[datetime]:
    """The GCRA taken backwards over each ``ahead[i:]``, last ``i`` first: the latest time by
    which their charges, one interval each, must begin to end by their own times. An arrival
    before it shares none of their windows beyond the rate; one later by ``d`` crowds them by
    ``d``."""
    start: datetime | None = None
    for time, count in reversed(ahead):
        start = (time if start is None else min(time, start)) - interval * count
        yield start


def _starts(ahead: Charges, interval: timedelta) -> list[datetime]:
    """The backward start of each ``ahead[i:]``, in ``ahead``'s order."""
    return list(_backward_starts(ahead, interval))[::-1]


def _overlap(tat: datetime | None, ahead: Charges, at: datetime, interval: timedelta) -> timedelta:
    """How much of the burst tolerance an arrival at ``at`` finds taken (``ahead``: the
    charges after it): its TAT's lead over it, plus its lead over the charges after it."""
    early = timedelta(0)
    if ahead:
        early = max(at - deque(_backward_starts(ahead, interval), maxlen=1)[0], early)
    return _later(tat, at) - at + early


def _take_rate(team: TeamState, arrival: datetime, now: datetime) -> bool:
    """GCRA over every charge in time order, whatever order they are made in: a dispatch
    counted at ``arrival`` (``now`` if earlier) conforms when, with it, no window of length
    ``L`` holds more than ``burst + L / interval`` charges. It is exact: the charges before it
    weigh through their TAT, those after it through their backward start (``_starts``), and
    the window condition is that the two leads add up to at most the burst tolerance.

    A run claimed ahead is charged at its due time, kept apart until ``now`` reaches it (one
    entry per distinct time; ``MAX_RATE_AHEAD`` of them). A segment list (start, TAT) would
    be shorter but not exact: it forgets where within a segment the charges fall, which
    decides the room for an arrival inside it. Past the bound the earliest entry is taken
    into the TAT as if already charged: the TAT then still bounds every charge it stands
    for, which is what keeps later decisions safe; they only admit less."""
    interval = team.quota.emission_interval
    if interval is None:
        return True
    tolerance = _tolerance(team.quota, interval)
    tat, ahead = _charged(team.rate_tat, team.rate_ahead, now, interval)
    team.rate_tat, team.rate_ahead = tat, ahead  # changes no decision: not to be written
    at = max(arrival, now)
    last = not ahead or at >= ahead[-1][0]
    if last:  # after every charge (a herd claimed in due order): the usual GCRA on their TAT
        if _later(team.rate_end, at) - at > tolerance:
            return False
    else:
        tat_at, after = _charged(tat, ahead, at, interval)
        if _overlap(tat_at, after, at, interval) > tolerance:
            return False
    end: datetime | None
    if at == now:
        tat = _later(tat, at) + interval
        # The charges ahead, all later, now end one interval later at most.
        end = max(team.rate_end or tat, tat + interval * sum(n for _, n in ahead))
    else:
        # Those before ``at`` unchanged, the end goes on from this charge through the later.
        end = (
            _later(team.rate_end, at) + interval
            if last
            else _end(_later(tat_at, at) + interval, after, interval)
        )
        ahead = _charge_ahead(ahead, at)
        if len(ahead) > MAX_RATE_AHEAD:
            tat, ahead = _later(tat, ahead[0][0]) + interval * ahead[0][1], ahead[1:]
    team.rate_tat, team.rate_ahead, team.rate_end, team.dirty = tat, ahead, end, True
    return True


def _charge_ahead(ahead: Charges, at: datetime) -> Charges:
    """``ahead`` with one more charge at ``at``, in time order."""
    index = bisect.bisect_left(ahead, at, key=lambda charge: charge[0])
    if index < len(ahead) and ahead[index][0] == at:
        return [*ahead[:index], (at, ahead[index][1] + 1), *ahead[index + 1 :]]
    return [*ahead[:index], (at, 1), *ahead[index:]]


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
