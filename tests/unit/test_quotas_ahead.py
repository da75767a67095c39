"""The rate limit with runs charged ahead of their time (issue 34): every charge made ahead is
kept until its time, and a dispatch is admitted exactly when all the charges, taken in time
order, still conform to the GCRA."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from duetime_core import quotas
from duetime_core.quotas import QuotaLimit, TeamQuota, TeamState, admit
from testkit.properties import examples

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
S = timedelta(seconds=1)
MS = timedelta(milliseconds=1)
US = timedelta(microseconds=1)


def rated(runs_per_minute: int, burst: int) -> TeamState:
    return TeamState("a", TeamQuota(runs_per_minute=runs_per_minute, rate_burst=burst))


def test_runs_arriving_now_fill_the_time_before_a_run_claimed_ahead() -> None:
    # One a second, no burst to speak of; a run due at :10 claimed at :00. Before issue 34 every
    # run arriving between :00 and :10 was refused until :10.
    t = rated(60, 1)
    assert admit(t, T0 + 10 * S, T0) is QuotaLimit.NONE
    assert (t.rate_tat, t.rate_ahead, t.rate_end) == (None, [(T0 + 10 * S, 1)], T0 + 11 * S)
    assert t.rate_available(T0) == 1
    admitted = [admit(t, T0 + n * S / 2, T0 + n * S / 2) for n in range(20)]
    # One a second from :00 to :09 (its slot ends by :10); the claimed run's at :10.
    assert admitted == [QuotaLimit.NONE, QuotaLimit.RATE] * 10
    assert t.rate_eligible_time(T0 + 9.5 * S) == T0 + 11 * S
    # Once its time comes, the claimed run's charge joins the TAT.
    assert admit(t, T0 + 10 * S, T0 + 10 * S) is QuotaLimit.RATE
    assert (t.rate_tat, t.rate_ahead) == (T0 + 11 * S, [])
    assert admit(t, T0 + 11 * S, T0 + 11 * S) is QuotaLimit.NONE


def test_runs_arriving_before_a_claim_share_its_windows_within_the_burst() -> None:
    t = rated(60, 3)  # one a second, three at once
    assert admit(t, T0 + 4 * S, T0) is QuotaLimit.NONE
    # At :00 three at once (with the claim at :04, four in 4 s: within 3 + 4).
    assert t.rate_available(T0) == 3
    assert [admit(t, T0, T0) for _ in range(4)] == [QuotaLimit.NONE] * 3 + [QuotaLimit.RATE]
    # At :02 two more (seven in [:00, :04], 3 + 4 allows it); at :03 three (3 at :03 and the
    # one at :04: four within 1 s, 3 + 1).
    assert t.rate_available(T0 + 2 * S) == 2
    assert t.rate_available(T0 + 3 * S) == 3
    assert t.rate_eligible_time(T0 + 0.5 * S) == T0 + S


def test_a_run_claimed_at_a_time_already_charged_waits_its_turn_after_it() -> None:
    t = rated(60, 2)
    assert admit(t, T0 + 10 * S, T0) is QuotaLimit.NONE
    assert admit(t, T0 + 10 * S, T0) is QuotaLimit.NONE  # second of the burst
    assert admit(t, T0 + 10 * S, T0) is QuotaLimit.RATE
    assert (t.rate_ahead, t.rate_end) == ([(T0 + 10 * S, 2)], T0 + 12 * S)
    # A run claimed ahead but due before them is charged at its own time, before them.
    assert admit(t, T0 + 5 * S, T0) is QuotaLimit.NONE
    assert t.rate_ahead == [(T0 + 5 * S, 1), (T0 + 10 * S, 2)]


def test_runs_arriving_now_take_the_room_between_claims_made_every_few_seconds() -> None:
    # The review's case: one a second, no burst; a job due every 3 s claimed up to 10 s ahead,
    # beside a held backlog released every second. The job takes one second in three; the
    # backlog must take the other two. Before, only the time before the first claim was
    # offered to it: each later claim was charged after the chain, and the backlog waited.
    t = rated(60, 1)
    claimed = T0
    backlog: list[datetime] = []
    for second in range(60):
        now = T0 + second * S
        while admit(t, now, now) is QuotaLimit.NONE:  # the pass releases held runs first
            backlog.append(now)
        while claimed + 3 * S <= now + 10 * S:  # then claims what falls in its look-ahead
            claimed += 3 * S
            assert admit(t, claimed, now) is QuotaLimit.NONE
    # Every second but the job's (:03, :06, ...).
    assert backlog == [T0 + n * S for n in range(60) if n % 3 or n == 0]


def test_a_claim_ahead_leaves_the_burst_free_now_while_its_windows_have_room() -> None:
    # An idle team at one a second with a burst of ten claims one run 8 s ahead: ten may go
    # now (eleven in 8 s is within 10 + 8); at its time the claimed run is one of the ten.
    t = rated(60, 10)
    assert admit(t, T0 + 8 * S, T0) is QuotaLimit.NONE
    assert [t.rate_available(T0 + n * S) for n in (0, 4, 8)] == [10, 10, 9]
    assert [admit(t, T0, T0) for _ in range(11)] == [QuotaLimit.NONE] * 10 + [QuotaLimit.RATE]
    # Those ten and the claimed run leave seven at its time: 18 in 8 s at most.
    assert t.rate_available(T0 + 8 * S) == 7


def test_past_the_bound_the_earliest_charges_ahead_count_as_charged() -> None:
    # 100 runs claimed ahead at distinct times: the first ones are taken into the TAT, which
    # only holds back more; the charges still conform.
    t = rated(6000, 5)  # one every 10 ms
    times = [T0 + S + n * 20 * MS for n in range(100)]
    assert all(admit(t, at, T0) is QuotaLimit.NONE for at in times)
    assert len(t.rate_ahead) == quotas.MAX_RATE_AHEAD
    assert t.rate_ahead[0][0] == times[100 - quotas.MAX_RATE_AHEAD]
    assert t.rate_tat == times[99 - quotas.MAX_RATE_AHEAD] + 10 * MS
    assert t.rate_end == times[-1] + 10 * MS
    # Runs arriving now wait for those, as for every charge ahead before issue 34, and use
    # the room between those still kept.
    assert t.rate_available(T0) == 0
    assert t.rate_eligible_time(T0) == t.rate_tat - 4 * 10 * MS
    assert t.rate_available(t.rate_tat) == 5


def test_a_state_an_older_build_changed_is_taken_as_charged_by_its_end() -> None:
    t = rated(60, 1)
    assert admit(t, T0 + 5 * S, T0) is QuotaLimit.NONE
    end, tat, ahead = t.rate_end, t.rate_tat, list(t.rate_ahead)
    same = rated(60, 1)
    same.restore_rate(end, tat, ahead, chained=False)
    assert (same.rate_tat, same.rate_ahead) == (None, [(T0 + 5 * S, 1)])
    # An older build charged a run after everything: its rate_tat moved on, the rest did not.
    older = rated(60, 1)
    older.restore_rate(T0 + 7 * S, tat, ahead, chained=False)
    assert (older.rate_tat, older.rate_ahead) == (T0 + 7 * S, [])
    # Or it left a chain of its own open (its gap TAT and chain end cover its charges).
    chained = rated(60, 1)
    chained.restore_rate(T0 + 6 * S, T0 + 2 * S, [], chained=True)
    assert (chained.rate_tat, chained.rate_ahead) == (T0 + 6 * S, [])
    # A rate changed since: the charges are kept as charged by their end.
    slower = rated(30, 1)
    slower.restore_rate(end, tat, ahead, chained=False)
    assert (slower.rate_tat, slower.rate_ahead) == (T0 + 7 * S, [])


def _conforms(times: list[datetime], quota: TeamQuota) -> bool:
    """At most ``burst + floor(span / interval)`` charges counted in any closed window of
    ``span``: the GCRA's exact bound, by brute force over every pair of charges."""
    interval = quota.emission_interval
    assert interval is not None
    ordered = sorted(times)
    return all(
        j - i + 1 <= quota.rate_burst + (ordered[j] - ordered[i]) // interval
        for j in range(len(ordered))
        for i in range(j + 1)
    )


_steps = st.lists(
    st.tuples(
        st.integers(0, 3000),  # ms the clock moves on
        st.one_of(
            st.tuples(st.just("now"), st.integers(1, 8)),  # runs arriving now (held runs)
            st.tuples(st.just("ahead"), st.integers(1, 15_000)),  # a run claimed ms ahead
        ),
    ),
    max_size=30,
)


def _check_read_agrees(team: TeamState, now: datetime) -> None:
    """``rate_available`` is how many runs arriving now would be admitted one after another,
    and ``rate_eligible_time`` the first instant one would be."""
    trial = copy.deepcopy(team)
    went = 0
    while went < team.quota.rate_burst and admit(trial, now, now) is QuotaLimit.NONE:
        went += 1
    assert team.rate_available(now) == went
    eligible = team.rate_eligible_time(now)
    assert (eligible == now) == (went > 0)
    assert admit(copy.deepcopy(team), eligible, eligible) is QuotaLimit.NONE
    for before in (eligible - US, now + (eligible - now) / 2):
        if now <= before < eligible:
            assert admit(copy.deepcopy(team), before, before) is QuotaLimit.RATE


def _end(times: list[datetime], quota: TeamQuota) -> datetime:
    """The GCRA's TAT over ``times`` taken in time order (``T0`` for none)."""
    interval = quota.emission_interval
    assert interval is not None
    tat = T0
    for at in sorted(times):
        tat = max(tat, at) + interval
    return tat


def _check_end(team: TeamState, times: list[datetime]) -> None:
    """``rate_end`` agrees with the rest of the state (it is read back as stored) and is past
    every charge taken in time order (an older build goes on from it)."""
    assert (team.rate_end or T0) >= _end(times, team.quota)
    stored = rated(team.quota.runs_per_minute, team.quota.rate_burst)
    stored.restore_rate(team.rate_end, team.rate_tat, team.rate_ahead, chained=False)
    assert (stored.rate_tat, stored.rate_ahead) == (team.rate_tat, team.rate_ahead)


def _run(runs_per_minute: int, burst: int, steps: list[tuple[int, tuple[str, int]]]) -> None:
    """Every admission is exactly what the brute-force oracle says of the charges with it."""
    team = rated(runs_per_minute, burst)
    now = T0
    times: list[datetime] = []
    for moved, (kind, n) in steps:
        now += moved * MS
        _check_read_agrees(team, now)
        arrivals = [now + n * MS] if kind == "ahead" else [now] * n
        for at in arrivals:
            admitted = admit(team, at, now) is QuotaLimit.NONE
            assert admitted == _conforms([*times, at], team.quota)
            if not admitted:
                break
            times.append(at)
        _check_end(team, times)
        assert (team.rate_end or T0) == _end(times, team.quota)  # exact below the bound


@settings(max_examples=examples(500), deadline=None)
@given(st.sampled_from([7, 60, 600, 6000]), st.integers(1, 12), _steps)
def test_a_dispatch_is_admitted_exactly_when_all_charges_in_time_order_conform(
    runs_per_minute: int, burst: int, steps: list[tuple[int, tuple[str, int]]]
) -> None:
    _run(runs_per_minute, burst, steps)


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from([7, 60, 600, 6000]), st.integers(1, 12), _steps)
def test_past_the_bound_on_charges_ahead_the_limit_still_holds(
    runs_per_minute: int, burst: int, steps: list[tuple[int, tuple[str, int]]]
) -> None:
    # With room for two times ahead, the earliest ones are often taken into the TAT: what is
    # admitted may be less than exact, never more than the limit, and the reads still agree.
    with mock.patch.object(quotas, "MAX_RATE_AHEAD", 2):
        team = rated(runs_per_minute, burst)
        now = T0
        times: list[datetime] = []
        for moved, (kind, n) in steps:
            now += moved * MS
            _check_read_agrees(team, now)
            for at in [now + n * MS] if kind == "ahead" else [now] * n:
                if admit(team, at, now) is not QuotaLimit.NONE:
                    break
                times.append(at)
            assert len(team.rate_ahead) <= 2
            _check_end(team, times)
        assert _conforms(times, team.quota)
