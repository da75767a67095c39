"""The rate limit with runs charged ahead of their time (issue 34): runs arriving now fill the
gap before a chain of charges made ahead, and neither exceeds the limit."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from duetime_core.quotas import QuotaLimit, TeamQuota, TeamState, admit
from testkit.properties import examples

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
S = timedelta(seconds=1)
MS = timedelta(milliseconds=1)
US = timedelta(microseconds=1)


def rated(runs_per_minute: int, burst: int) -> TeamState:
    return TeamState("a", TeamQuota(runs_per_minute=runs_per_minute, rate_burst=burst))


def test_runs_arriving_now_fill_the_time_before_a_run_claimed_ahead() -> None:
    # One a second, no burst to speak of; a run due at :10 claimed at :00. Before the fix every
    # run arriving between :00 and :10 was refused until :10.
    t = rated(60, 1)
    assert admit(t, T0 + 10 * S, T0) is QuotaLimit.NONE
    assert (t.rate_ahead_from, t.rate_tat) == (T0 + 10 * S, T0 + 11 * S)
    assert t.rate_available(T0) == 1
    admitted = [admit(t, T0 + n * S / 2, T0 + n * S / 2) for n in range(20)]
    # One a second from :00 to :09 (its slot ends by :10); the claimed run's at :10.
    assert admitted == [QuotaLimit.NONE, QuotaLimit.RATE] * 10
    assert t.rate_eligible_time(T0 + 9.5 * S) == T0 + 11 * S
    # Once the chain's time comes, the gap is gone and the usual GCRA goes on after it.
    assert admit(t, T0 + 10 * S, T0 + 10 * S) is QuotaLimit.RATE
    assert (t.rate_ahead_from, t.rate_gap_tat) == (None, None)
    assert admit(t, T0 + 11 * S, T0 + 11 * S) is QuotaLimit.NONE


def test_the_gap_keeps_the_burst_tolerance_and_never_overlaps_the_chain() -> None:
    t = rated(60, 3)  # one a second, three at once
    assert admit(t, T0 + 4 * S, T0) is QuotaLimit.NONE
    # At :00 the gap (:00 to :04) has room for three at once (slots :00, :01, :02), and the
    # chain's end for none more within the tolerance (:05 is 5 s away).
    assert t.rate_available(T0) == 3
    assert [admit(t, T0, T0) for _ in range(4)] == [QuotaLimit.NONE] * 3 + [QuotaLimit.RATE]
    # At :02 the gap's last slot (:03) only; at :03 that one and one after the chain (:05 is
    # within the 2 s tolerance).
    assert t.rate_available(T0 + 2 * S) == 1
    assert t.rate_available(T0 + 3 * S) == 2
    assert t.rate_eligible_time(T0 + 0.5 * S) == T0 + S


def test_a_run_claimed_within_the_chain_is_charged_after_it() -> None:
    t = rated(60, 2)
    assert admit(t, T0 + 10 * S, T0) is QuotaLimit.NONE
    assert admit(t, T0 + 10 * S, T0) is QuotaLimit.NONE  # second of the burst, at :11
    assert admit(t, T0 + 10 * S, T0) is QuotaLimit.RATE
    assert t.rate_tat == T0 + 12 * S
    # A run claimed ahead but due before the chain fills the gap like one arriving now.
    assert admit(t, T0 + 5 * S, T0) is QuotaLimit.NONE
    assert t.rate_gap_tat == T0 + 6 * S


def _admitted_ok(times: list[datetime], quota: TeamQuota) -> bool:
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


def _gap_has_room(times: list[datetime], now: datetime, quota: TeamQuota, chains: int) -> bool:
    """Whether a run arriving ``now`` fits before the earliest charge counted later than now:
    taken in time order with the charges counted by now, it conforms to the GCRA and its
    interval ends by then (the charges' in-time-order TAT, from their count times only).

    Less than one interval a claim ahead may be lost where its gap meets it (an arrival the
    gap has no whole interval for is charged after the claim, not before it), so the room
    asked for is ``chains`` (the claims ahead so far) intervals more."""
    interval = quota.emission_interval
    assert interval is not None
    pending = [c for c in times if c > now]
    if not pending:
        return False
    done = [*sorted(c for c in times if c <= now), now]
    tat = max(c + interval * (len(done) - i) for i, c in enumerate(done)) + chains * interval
    tolerance = interval * (quota.rate_burst - 1)
    return tat - interval - now <= tolerance and tat <= min(pending)


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
    if eligible > now:
        assert admit(copy.deepcopy(team), eligible - US, eligible - US) is QuotaLimit.RATE


def _run(
    runs_per_minute: int, burst: int, steps: list[tuple[int, tuple[str, int]]], one_ahead: bool
) -> None:
    team = rated(runs_per_minute, burst)
    quota = team.quota
    now = T0
    times: list[datetime] = []
    claims = 0
    for moved, (kind, n) in steps:
        now += moved * MS
        _check_read_agrees(team, now)
        if kind == "ahead":
            if one_ahead and any(c > now for c in times):
                continue
            if admit(team, now + n * MS, now) is QuotaLimit.NONE:
                times.append(now + n * MS)
                claims += 1
            continue
        for _ in range(n):
            if admit(team, now, now) is QuotaLimit.NONE:
                times.append(now)
            else:
                # The bug: refused although the time before a chain claimed ahead is free.
                assert not (one_ahead and _gap_has_room(times, now, quota, claims))
                break
    assert _admitted_ok(times, quota)


@settings(max_examples=examples(500), deadline=None)
@given(st.sampled_from([7, 60, 600, 6000]), st.integers(1, 12), _steps)
def test_charges_now_and_ahead_never_exceed_the_limit_in_any_window(
    runs_per_minute: int, burst: int, steps: list[tuple[int, tuple[str, int]]]
) -> None:
    _run(runs_per_minute, burst, steps, one_ahead=False)


@settings(max_examples=examples(500), deadline=None)
@given(st.sampled_from([7, 60, 600, 6000]), st.integers(1, 12), _steps)
def test_a_run_arriving_now_is_admitted_while_the_gap_before_a_claim_has_room(
    runs_per_minute: int, burst: int, steps: list[tuple[int, tuple[str, int]]]
) -> None:
    # As the scheduler does for a job's next occurrence: one run claimed ahead at a time.
    _run(runs_per_minute, burst, steps, one_ahead=True)


def test_free_now_dips_only_by_the_runs_claimed_ahead_not_by_their_lead() -> None:
    # An idle team at one a second with a burst of ten claims one run 8 s ahead: the other nine
    # of the burst are free at once, before and after the claimed run's time.
    t = rated(60, 10)
    assert admit(t, T0 + 8 * S, T0) is QuotaLimit.NONE
    assert [t.rate_available(T0 + n * S) for n in (0, 4, 8)] == [9, 9, 9]
    assert [admit(t, T0, T0) for _ in range(10)] == [QuotaLimit.NONE] * 9 + [QuotaLimit.RATE]
